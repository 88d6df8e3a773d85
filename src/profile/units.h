/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_UNITS_H
#define PLATEAU_UNITS_H

#include <stddef.h>

/*
 * A quantity in a sample type's unit for people: "12.3ms", "4.0MiB",
 * "1,234".  Units other than nanoseconds/microseconds/milliseconds/
 * seconds and bytes are printed as plain numbers.
 */
void units_format(double v, const char *unit, char *buf, size_t size);

#endif
