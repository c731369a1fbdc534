package bas_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/ai"
	"github.com/bas-platform/bas/internal/ai/aitest"
	"github.com/bas-platform/bas/internal/wiring"
)

// TestAIKeySurvivesReopen: the secret key is kept in <Dir>/secret.key
// (0600), so an API key sealed before a restart still opens after it.
func TestAIKeySurvivesReopen(t *testing.T) {
	model := aitest.New("sk-reopen-0123456789")
	defer model.Close()
	dir := t.TempDir()
	health := func(ws *bas.Workspace) string {
		p, _ := ws.Capabilities().Provider("connector.openai")
		return p.(capability.HealthChecker).Health(capability.WithTenant(context.Background(), "t1")).Status
	}
	ws, err := bas.Open(context.Background(), bas.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	key := "sk-reopen-0123456789"
	if _, _, err := wiring.Of(ws.Internal()).AI().SetConnection(context.Background(), "t1", "admin",
		ai.ConnectionIn{BaseURL: model.BaseURL(), Model: "m", APIKey: &key}); err != nil {
		t.Fatal(err)
	}
	if got := health(ws); got != "connected" {
		t.Fatalf("health = %s", got)
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "secret.key"))
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("secret.key: %v %v", st, err)
	}
	ws, err = bas.Open(context.Background(), bas.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if got := health(ws); got != "connected" {
		t.Errorf("health after reopening = %s", got)
	}
	if _, err := bas.Open(context.Background(), bas.Options{InMemory: true, SecretKey: make([]byte, 31)}); err == nil {
		t.Errorf("a 31-byte secret key was accepted")
	}
}
