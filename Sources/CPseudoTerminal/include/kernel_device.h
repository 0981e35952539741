#ifndef DOORGATEWAY_KERNEL_DEVICE_H
#define DOORGATEWAY_KERNEL_DEVICE_H
/* The kernel interfaces of pn532-sim's bus fronts: the FUSE/CUSE protocol
 * spoken over /dev/cuse (linux/fuse.h), and the ioctl numbers of i2c-dev
 * (linux/i2c-dev.h) and spidev (linux/spi/spidev.h) it answers. The ioctl
 * numbers are function-like macros, which Swift does not import. */
#include <linux/fuse.h>
#include <linux/i2c-dev.h>
#include <linux/i2c.h>
#include <linux/spi/spidev.h>
#include <sys/prctl.h>
#include <stdint.h>

static inline uint32_t door_spi_ioc_message(uint32_t n) { return (uint32_t)SPI_IOC_MESSAGE(n); }
static inline uint32_t door_spi_ioc_rd_mode(void) { return (uint32_t)SPI_IOC_RD_MODE; }
static inline uint32_t door_spi_ioc_wr_mode(void) { return (uint32_t)SPI_IOC_WR_MODE; }
static inline uint32_t door_spi_ioc_rd_mode32(void) { return (uint32_t)SPI_IOC_RD_MODE32; }
static inline uint32_t door_spi_ioc_wr_mode32(void) { return (uint32_t)SPI_IOC_WR_MODE32; }
static inline uint32_t door_spi_ioc_rd_lsb_first(void) { return (uint32_t)SPI_IOC_RD_LSB_FIRST; }
static inline uint32_t door_spi_ioc_wr_lsb_first(void) { return (uint32_t)SPI_IOC_WR_LSB_FIRST; }
static inline uint32_t door_spi_ioc_rd_bits_per_word(void) { return (uint32_t)SPI_IOC_RD_BITS_PER_WORD; }
static inline uint32_t door_spi_ioc_wr_bits_per_word(void) { return (uint32_t)SPI_IOC_WR_BITS_PER_WORD; }
static inline uint32_t door_spi_ioc_rd_max_speed_hz(void) { return (uint32_t)SPI_IOC_RD_MAX_SPEED_HZ; }
static inline uint32_t door_spi_ioc_wr_max_speed_hz(void) { return (uint32_t)SPI_IOC_WR_MAX_SPEED_HZ; }
static inline uint32_t door_spi_lsb_first(void) { return (uint32_t)SPI_LSB_FIRST; }
/* The fields of an ioctl number (asm-generic/ioctl.h). */
static inline uint32_t door_ioc_nr(uint32_t cmd) { return _IOC_NR(cmd); }
static inline uint32_t door_ioc_type(uint32_t cmd) { return _IOC_TYPE(cmd); }
static inline uint32_t door_ioc_size(uint32_t cmd) { return _IOC_SIZE(cmd); }
static inline uint32_t door_ioc_dir(uint32_t cmd) { return _IOC_DIR(cmd); }

/* prctl(2) is variadic, which Swift cannot call: the calling thread's timer
 * slack (PR_SET_TIMERSLACK, 50 us by default), by which the kernel may delay
 * the end of its sleeps. */
static inline int door_set_timer_slack_ns(unsigned long ns) { return prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0); }

#endif
