#ifndef DOORGATEWAY_STATIC_NSS_H
#define DOORGATEWAY_STATIC_NSS_H

/* Pins glibc's name-service switch to the sources built into the static
 * binary: `files` for users, groups and the other local databases, `files
 * dns` for host names (__nss_configure_lookup(3), declared in <nss.h>).
 *
 * Whatever /etc/nsswitch.conf lists after them (Debian 12: `systemd` for
 * passwd/group; Raspberry Pi OS: `mdns4_minimal` before `dns` for hosts)
 * would otherwise be dlopen'ed into the static process, built against another
 * glibc, and crash it. Call once, first thing in main, before any thread.
 * Returns 0, or -1 naming the database in `*failed`. */
int door_pin_static_nss(const char **failed);

#endif
