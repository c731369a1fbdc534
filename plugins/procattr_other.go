//go:build !linux

package plugins

import "os/exec"

// configureCmd has nothing to add outside Linux: there is no parent-death
// signal, and Close remains the way plugins are stopped.
func configureCmd(*exec.Cmd) {}

// killTree kills the plugin's process; outside Linux the processes it
// started are left to it.
func killTree(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
