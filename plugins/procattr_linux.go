package plugins

import (
	"os/exec"
	"syscall"
)

// configureCmd makes the kernel SIGKILL the plugin when the host dies, so a
// host killed without a chance to clean up leaves no plugin behind.
//
// The signal follows the host thread that started the plugin; Go keeps its
// threads alive unless a goroutine exits while locked to one, which the host
// never does.
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
