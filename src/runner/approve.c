/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER */
#include "runner.h"
