/* tune_tool.h - `tutti-info --tune`: the automatic choice per collective and size. */
#ifndef TUTTI_TUNE_TOOL_H
#define TUTTI_TUNE_TOOL_H

/** argv from "--tune N" on; returns the exit status. */
int tutti__tune_tool(int argc, char **argv);

#endif /* TUTTI_TUNE_TOOL_H */
