package plugins_test

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/plugins/plugintest"
)

// A host killed with SIGKILL cannot clean up: the kernel kills its plugins.
func TestKilledHostLeavesNoPlugin(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=host", helperPluginEnv+"="+plugintest.Link(t, bin, t.TempDir(), "test"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper host: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("helper host printed %q", line)
	}
	if !plugintest.Alive(pid) {
		t.Fatalf("plugin %d is not running under the helper host", pid)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	testwait.Until(t, "the orphaned plugin dies", func() bool { return !plugintest.Alive(pid) })
}
