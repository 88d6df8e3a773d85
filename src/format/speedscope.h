/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SPEEDSCOPE_H
#define PLATEAU_SPEEDSCOPE_H

#include <stdio.h>

#include "profile/profile.h"
#include "util/error.h"

/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile per sample type, frames shared.
 */
int speedscope_write(const struct profile *p, FILE *f, struct error *err);

#endif
