//go:build unix

package plugintest

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// Alive tells whether a process exists and is not a zombie: tests use it to
// see that a plugin's process was stopped or reaped.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no procfs: the signal said it exists
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
