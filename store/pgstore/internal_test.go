package pgstore

import "testing"

func TestDefaultSchema(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		searchPath, want string
	}{
		{"", "public"},
		{"bas", "bas"},
		{"bas, public", "bas"},
		{`"My Schema",public`, "My Schema"},
		{"$user, public", "public"},
	} {
		if got := defaultSchema(map[string]string{"search_path": test.searchPath}); got != test.want {
			t.Errorf("defaultSchema(search_path=%q) = %q, want %q", test.searchPath, got, test.want)
		}
	}
}
