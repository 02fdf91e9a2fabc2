/*
 * hang_report.h - `tutti-info --hang`: which ranks are behind, from the `tutti: hang` records
 * in the ranks' logs (TUTTI_LOG_FILE).
 */
#ifndef TUTTI_HANG_REPORT_H
#define TUTTI_HANG_REPORT_H

#include <stdio.h>

/**
 * Read the records in `files` and print, per communicator, each rank's state and the line
 * "behind: R..." (the ranks without a record or with an earlier operation).
 * @return 0 when records were found, 1 when none.
 */
int tutti__hang_report(FILE *out, int nfiles, char **files);

#endif /* TUTTI_HANG_REPORT_H */
