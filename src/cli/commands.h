/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One subcommand per file (cmd-<name>.c); main.c holds the dispatch table. Each returns
 * the process exit status. */
int ts_cmd_run(int argc, char **argv);
int ts_cmd_doctor(int argc, char **argv);
int ts_cmd_create(int argc, char **argv);
int ts_cmd_start(int argc, char **argv);
int ts_cmd_stop(int argc, char **argv);
int ts_cmd_restart(int argc, char **argv);
int ts_cmd_exec(int argc, char **argv);
int ts_cmd_ps(int argc, char **argv);
int ts_cmd_logs(int argc, char **argv);
int ts_cmd_kill(int argc, char **argv);
int ts_cmd_ls(int argc, char **argv);
int ts_cmd_inspect(int argc, char **argv);
int ts_cmd_rm(int argc, char **argv);
int ts_cmd_reap(int argc, char **argv);
int ts_cmd_cp(int argc, char **argv);
