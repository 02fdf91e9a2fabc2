/*
 * tutti/export.h - symbol visibility. The library is built with -fvisibility=hidden and a linker
 * version script; only declarations marked TUTTI_API are exported.
 */
#ifndef TUTTI_EXPORT_H
#define TUTTI_EXPORT_H

#if defined(__GNUC__)
#define TUTTI_API __attribute__((visibility("default")))
#else
#define TUTTI_API
#endif

#endif /* TUTTI_EXPORT_H */
