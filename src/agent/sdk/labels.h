/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_SDK_LABELS_H
#define PLATEAU_AGENT_SDK_LABELS_H

/*
 * Interned labels (labels.c): every KEY=VALUE pair a thread pushes, or the
 * collector adds (thread name, thread state, latency), gets a small id that
 * samples carry.  A per-process cap on distinct values per key sends the
 * overflow to "_other" (counted in agent_state.counters.label_overflow).
 * Strings live in memory mapped once; ids are never reused.
 */

#include <stdbool.h>
#include <stdint.h>

#define AGENT_LABELS_MAX     16384 /* pairs per process */
#define AGENT_LABEL_KEYS_MAX 64	   /* distinct keys per process */
#define AGENT_LABEL_STR_MAX  255   /* bytes of a key or value; longer are cut */
#define AGENT_LABEL_OTHER    "_other"

/* The id of KEY=VALUE (cold: takes a spinlock), 0 when it cannot be made. */
uint32_t agent_label_intern(const char *key, const char *value);

/* Key and value of ID (borrowed, valid for the process); false for an unknown id. */
bool agent_label_get(uint32_t id, const char **key, const char **value);

/* The key number of ID (for "inner hides outer"), or -1. */
int agent_label_key(uint32_t id);

/* Fork: make the table usable in the child (called by the atfork handlers). */
void agent_labels_atfork_prepare(void);
void agent_labels_atfork_parent(void);
void agent_labels_atfork_child(void);

#endif
