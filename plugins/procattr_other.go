//go:build !linux

package plugins

import "os/exec"

// configureCmd has nothing to add outside Linux: there is no parent-death
// signal, and Close remains the way plugins are stopped.
func configureCmd(*exec.Cmd) {}
