#!/usr/bin/env bash
# Quick start 1: install dependencies, build, run sql/demo.sql in the shell.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
sqlite3 :memory: < sql/demo.sql
