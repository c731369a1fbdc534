//go:build race

package main

// Under -race the server is built with -race too: its packages are then
// already compiled, and the run checks the server for data races.
func init() { buildFlags = append(buildFlags, "-race") }
