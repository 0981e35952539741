/* spi-jedec-id DEVICE: send a SPI NOR flash's JEDEC "read identification"
 * (0x9f) through a spidev node and print the three ID bytes as hex. Built
 * static for aarch64 by scripts/raspi3b/run.sh; the raspi3b guest runs it on
 * /dev/spidev0.0 against QEMU's w25q64 on the Pi's SPI0 (expect ef 40 17). */
#include <fcntl.h>
#include <linux/spi/spidev.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: spi-jedec-id /dev/spidevB.C\n");
        return 2;
    }
    int fd = open(argv[1], O_RDWR);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    uint8_t tx[4] = {0x9f, 0, 0, 0}, rx[4] = {0};
    struct spi_ioc_transfer t;
    memset(&t, 0, sizeof t);
    t.tx_buf = (uintptr_t)tx;
    t.rx_buf = (uintptr_t)rx;
    t.len = sizeof tx;
    t.speed_hz = 500000;
    t.bits_per_word = 8;
    if (ioctl(fd, SPI_IOC_MESSAGE(1), &t) < 0) {
        perror("SPI_IOC_MESSAGE");
        return 1;
    }
    printf("%02x %02x %02x\n", rx[1], rx[2], rx[3]);
    close(fd);
    return 0;
}
