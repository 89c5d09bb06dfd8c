// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// The program that loads plugin.cc's shared object.

#include <cstdio>

extern "C" int PluginRunTimer();

int main() {
  if (PluginRunTimer() != 0) return 1;
  std::printf("plugin_host: the plugin's timer fired\n");
  return 0;
}
