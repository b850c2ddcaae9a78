#!/bin/sh
# SPDX-License-Identifier: MIT
# retry.sh N COMMAND [ARG]...: run COMMAND up to N times; succeed on its first success.
n=$1
shift
i=0
while [ "$i" -lt "$n" ]; do
	"$@" && exit 0
	i=$((i + 1))
done
exit 1
