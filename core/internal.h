/* internal.h: the core's private types and functions, shared by the core sources only. */
#ifndef PERFMOD_INTERNAL_H
#define PERFMOD_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "perfmod-plugin.h"

/* Exit statuses of the command-line contract. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

/* The declarations, by folder in the order of a prediction's path (each
   header uses the types of those before it). */
#include "io/io.h"
#include "hw/hw.h"
#include "model/model.h"
#include "predict/predict.h"
#include "parallel/parallel.h"
#include "serve/serve.h"
#include "report/report.h"
#include "learn/learn.h"
#include "commands.h"

#endif /* PERFMOD_INTERNAL_H */
