/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One subcommand per file (cmd-<name>.c); main.c holds the dispatch table. Each returns
 * the process exit status. */
int ts_cmd_run(int argc, char **argv);
int ts_cmd_doctor(int argc, char **argv);
