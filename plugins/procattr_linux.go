package plugins

import (
	"os/exec"
	"syscall"
)

// configureCmd makes the kernel SIGKILL the plugin when the host dies, so a
// host killed without a chance to clean up leaves no plugin behind, and
// starts the plugin in a process group of its own, so killTree ends the
// processes it started too.
//
// The signal follows the host thread that started the plugin; Go keeps its
// threads alive unless a goroutine exits while locked to one, which the host
// never does.
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killTree kills the plugin's process and every process of its group: a
// child the plugin started (a wrapper script's real plugin, a helper) holds
// the plugin's stdout and stderr, and go-plugin waits for their end before
// it lets the host go on.
func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
