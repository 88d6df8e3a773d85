/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PPROF_FIELDS_H
#define PLATEAU_PPROF_FIELDS_H

/*
 * Field numbers of profile.proto's Profile message, for the two streaming
 * writers that frame its repeated fields by hand (src/format/pprof_write.c
 * and the agent's src/agent/export/pprof.c; the agent may use nothing else of
 * src/ but the header-only pieces doc/architecture.md lists).
 */
enum pprof_field {
	F_SAMPLE_TYPE = 1,
	F_SAMPLE = 2,
	F_MAPPING = 3,
	F_LOCATION = 4,
	F_FUNCTION = 5,
	F_STRING_TABLE = 6,
	F_TIME_NANOS = 9,
	F_DURATION_NANOS = 10,
	F_PERIOD_TYPE = 11,
	F_PERIOD = 12,
	F_COMMENT = 13,
	F_DEFAULT_SAMPLE_TYPE = 14,
};

#endif
