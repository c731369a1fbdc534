// Command chaosplugin is a bas plugin that misbehaves on purpose, for the
// reliability tests of the plugin host and the workspace: it panics in a
// call, exits in the middle of one, hangs past the deadline, answers late,
// floods its stdout and stderr, or fails its handshake.
//
// Per call, the capability chaos.call takes {"do": "...", "millis": n,
// "lines": n, "bytes": n, "once": "marker file"}:
//
//   - ok: answers {"ok": true, "pid": ..., "key": <idempotency key>}
//   - panic: panics in the call (the SDK turns it into an error)
//   - panic-goroutine: panics on a goroutine of its own, which ends the
//     process in the middle of the call
//   - exit: exits with status 3 in the middle of the call
//   - hang: never answers, ignoring the call's context
//   - late: answers after millis, ignoring the call's context
//   - flood: writes lines lines of bytes bytes each to stdout and to
//     stderr (bytes 0: one line of lines x 1 KiB with no newline), then
//     answers
//   - flood-log: writes lines JSON log lines to the process's own stderr,
//     as a plugin's logger does, then answers
//   - emit: emits the event named by "event" to the call's tenant, then
//     answers (the plugin describes no app, so it declares no events)
//
// With "once" set, the call misbehaves only when the marker file does not
// exist yet (and creates it), and answers as ok afterwards. "do" defaults
// to BAS_CHAOS_CALL, or ok.
//
// BAS_CHAOS_CALLS names a file each call appends "<pid> <do> <idempotency
// key>\n" to as it begins.
//
// Per start: BAS_CHAOS_LOG names a file each process appends "<pid>\n" to
// when it starts. BAS_CHAOS_START makes starts misbehave before serving:
// bad-cookie (serves with another magic cookie), bad-version (speaks
// protocol version 99), garbage (prints a line that is no handshake and
// waits), exit (exits with status 4), flood-stderr (writes 4 MiB to
// stderr, then serves normally), child (starts a child process that
// inherits its stdout and stderr and sleeps, as a wrapper script's real
// plugin or a helper does, then serves normally), child-garbage (child,
// then garbage). BAS_CHAOS_CHILDREN names a file each child's pid is
// appended to. BAS_CHAOS_START_AT="from-to" limits that
// to the starts numbered from..to (counted in BAS_CHAOS_LOG, the first
// start is 1).
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/plugins/internal/wire"
	"github.com/bas-platform/bas/plugins/sdk"
	"github.com/hashicorp/go-plugin"
)

func main() {
	if os.Getenv("BAS_CHAOS_CHILD") != "" {
		<-make(chan struct{}) // a child: holds the pipes it inherited
	}
	n := logStart()
	if mode := os.Getenv("BAS_CHAOS_START"); mode != "" && startSelected(n) {
		misstart(mode)
	}
	sdk.Serve(&provider{})
}

// logStart appends the pid to BAS_CHAOS_LOG and returns the number of this
// start (0 without a log).
func logStart() int {
	path := os.Getenv("BAS_CHAOS_LOG")
	if path == "" {
		return 0
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos log:", err)
		os.Exit(2)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Close()
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

// startSelected tells whether start n is in BAS_CHAOS_START_AT.
func startSelected(n int) bool {
	at := os.Getenv("BAS_CHAOS_START_AT")
	if at == "" {
		return true
	}
	lo, hi, _ := strings.Cut(at, "-")
	from, _ := strconv.Atoi(lo)
	to, err := strconv.Atoi(hi)
	if err != nil {
		to = from
	}
	return n >= from && n <= to
}

func misstart(mode string) {
	switch mode {
	case "bad-cookie":
		hs := wire.Handshake()
		hs.MagicCookieKey, hs.MagicCookieValue = "NOT_BAS_PLUGIN", "wrong"
		plugin.Serve(&plugin.ServeConfig{HandshakeConfig: hs, VersionedPlugins: wire.PluginSets(nil), GRPCServer: plugin.DefaultGRPCServer})
		os.Exit(1)
	case "bad-version":
		hs := wire.Handshake()
		hs.ProtocolVersion = 99
		sets := wire.PluginSets(func(*plugin.GRPCBroker) wire.ProviderServer { return deaf{} })
		plugin.Serve(&plugin.ServeConfig{HandshakeConfig: hs,
			VersionedPlugins: map[int]plugin.PluginSet{99: sets[wire.ProtocolVersion]}, GRPCServer: plugin.DefaultGRPCServer})
		os.Exit(1)
	case "garbage":
		fmt.Println("hello, I am not a plugin")
		<-make(chan struct{})
	case "child":
		startChild()
	case "child-garbage":
		startChild()
		fmt.Println("hello, I am not a plugin")
		<-make(chan struct{})
	case "exit":
		os.Exit(4)
	case "flood-stderr":
		line := strings.Repeat("e", 1023) + "\n"
		for range 4096 {
			fmt.Fprint(os.Stderr, line)
		}
	}
}

// startChild starts this binary again as a child that sleeps with the
// plugin's stdout and stderr, and appends its pid to BAS_CHAOS_CHILDREN.
func startChild() {
	exe, err := os.Executable()
	if err == nil {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "BAS_CHAOS_CHILD=1")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		err = cmd.Start()
		if err == nil {
			err = appendLine(os.Getenv("BAS_CHAOS_CHILDREN"), strconv.Itoa(cmd.Process.Pid))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos child:", err)
		os.Exit(2)
	}
}

// appendLine appends line to the file at path (nothing when path is empty).
func appendLine(path, line string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

// deaf serves a protocol version the host does not speak.
type deaf struct{}

func (deaf) Init(context.Context, *wire.InitRequest) (*wire.InitResponse, error) {
	return nil, errors.New("not served")
}

func (deaf) Call(context.Context, *wire.CallRequest) (*wire.CallResponse, error) {
	return nil, errors.New("not served")
}

func (deaf) Health(context.Context, *wire.HealthRequest) (*wire.HealthResponse, error) {
	return nil, errors.New("not served")
}

// provider describes no app, so no list of events limits what it emits.
type provider struct {
	sdk.HostRef
}

func (*provider) Info() capability.Info {
	return capability.Info{Name: "Chaos", Capabilities: []string{"chaos.call"}}
}

// Capabilities describes chaos.call, so a workspace's registry accepts it.
func (*provider) Capabilities() []capability.Capability {
	return []capability.Capability{{
		ID:          "chaos.call",
		Name:        "Chaos call",
		Description: "Misbehaves as its arguments say; see the chaosplugin command's doc.",
		Args:        json.RawMessage(`{"type":"object"}`),
		Result:      json.RawMessage(`{"type":"object"}`),
	}}
}

type args struct {
	Do     string `json:"do"`
	Millis int    `json:"millis"`
	Lines  int    `json:"lines"`
	Bytes  int    `json:"bytes"`
	Once   string `json:"once"`
	Event  string `json:"event"`
}

func (p *provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	var a args
	if len(call.Args) > 0 {
		if err := json.Unmarshal(call.Args, &a); err != nil {
			return nil, sdk.Invalidf([]any{"args"}, "json_invalid", "bad arguments: %v", err)
		}
	}
	if a.Do == "" {
		a.Do = os.Getenv("BAS_CHAOS_CALL")
	}
	if a.Once != "" {
		if _, err := os.Stat(a.Once); err == nil {
			a.Do = "ok"
		} else if err := os.WriteFile(a.Once, []byte("done\n"), 0o600); err != nil {
			return nil, err
		}
	}
	logCall(a.Do, call.IdempotencyKey)
	switch a.Do {
	case "", "ok":
	case "panic":
		panic("chaos plugin panics in a call")
	case "panic-goroutine":
		go func() { panic("chaos plugin panics on its own goroutine") }()
		<-make(chan struct{})
	case "exit":
		os.Exit(3)
	case "hang":
		<-make(chan struct{})
	case "late":
		time.Sleep(time.Duration(a.Millis) * time.Millisecond)
	case "flood":
		flood(a.Lines, a.Bytes)
	case "emit":
		if err := p.Emit(ctx, capability.Event{Tenant: call.Tenant, Name: a.Event, Data: json.RawMessage(`{}`)}); err != nil {
			return nil, err
		}
	case "flood-log":
		// The process's own stderr (fd 2; os.Stderr goes to the host over
		// gRPC after Serve), where a plugin's logger writes JSON lines.
		raw := os.NewFile(2, "stderr")
		for i := range a.Lines {
			fmt.Fprintf(raw, `{"@level":"info","@message":"chaos log line","@timestamp":"2025-01-01T00:00:00Z","n":%d}`+"\n", i)
		}
	default:
		return nil, sdk.Invalidf([]any{"args", "do"}, "value_error", "unknown chaos %q", a.Do)
	}
	return json.Marshal(map[string]any{"ok": true, "pid": os.Getpid(), "key": call.IdempotencyKey})
}

// logCall appends "<pid> <do> <idempotency key>" to BAS_CHAOS_CALLS.
func logCall(do, key string) {
	path := os.Getenv("BAS_CHAOS_CALLS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%d %s %s\n", os.Getpid(), cmp.Or(do, "ok"), key)
	f.Close()
}

// flood writes lines lines of size bytes to stdout and stderr; size 0
// writes one line of lines KiB with no newline.
func flood(lines, size int) {
	if size == 0 {
		chunk := strings.Repeat("x", 1024)
		for range lines {
			fmt.Fprint(os.Stdout, chunk)
			fmt.Fprint(os.Stderr, chunk)
		}
		return
	}
	line := strings.Repeat("f", max(size-1, 0)) + "\n"
	for range lines {
		fmt.Fprint(os.Stdout, line)
		fmt.Fprint(os.Stderr, line)
	}
}
