/* footprint_tool.h - `tutti-info --footprint N`: what N local ranks hold after a set of calls. */
#ifndef TUTTI_FOOTPRINT_TOOL_H
#define TUTTI_FOOTPRINT_TOOL_H

/** argv from "--footprint N" on; returns the exit status. */
int tutti__footprint_tool(int argc, char **argv);

#endif /* TUTTI_FOOTPRINT_TOOL_H */
