#!/usr/bin/env bash
echo "static build: not yet"; exit 1
