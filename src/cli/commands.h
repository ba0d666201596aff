/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One subcommand per file (cmd-<name>.c); main.c holds the dispatch table. Each returns
 * the process exit status. */
int ts_subcmd_run(int argc, char **argv);
int ts_subcmd_doctor(int argc, char **argv);
int ts_subcmd_create(int argc, char **argv);
int ts_subcmd_start(int argc, char **argv);
int ts_subcmd_stop(int argc, char **argv);
int ts_subcmd_restart(int argc, char **argv);
int ts_subcmd_exec(int argc, char **argv);
int ts_subcmd_ps(int argc, char **argv);
int ts_subcmd_logs(int argc, char **argv);
int ts_subcmd_kill(int argc, char **argv);
int ts_subcmd_ls(int argc, char **argv);
int ts_subcmd_inspect(int argc, char **argv);
int ts_subcmd_rm(int argc, char **argv);
int ts_subcmd_reap(int argc, char **argv);
int ts_subcmd_cp(int argc, char **argv);
int ts_subcmd_attach(int argc, char **argv);
int ts_subcmd_timeout(int argc, char **argv);
int ts_subcmd_serve(int argc, char **argv);
int ts_subcmd_tool(int argc, char **argv);
int ts_subcmd_mcp(int argc, char **argv);
int ts_subcmd_runs(int argc, char **argv);
int ts_subcmd_image(int argc, char **argv);
int ts_subcmd_snapshot(int argc, char **argv);
int ts_subcmd_image_build(int argc, char **argv); /* image build, cmd-image-build.c */
