package bas

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// validatePlugins checks what validate leaves of the plugin options: every
// path in Plugins names an executable file, once, outside PluginDir; every
// PluginChecksums key names a plugin; every PluginEnv entry is KEY=value.
// Each of these was only logged, or not noticed at all: a mistyped path
// loaded no plugin, a mistyped checksum key left the plugin it was meant for
// running unchecked.
func (o Options) validatePlugins(bad func(option string, value any, want string) error) error {
	dir := ""
	if o.PluginDir != "" {
		dir = absPath(o.PluginDir)
	}
	seen := map[string]int{} // absolute path -> index in Plugins
	for i, p := range o.Plugins {
		option, value := fmt.Sprintf("Plugins[%d]", i), fmt.Sprintf("%q", p)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			return bad(option, value, "it cannot be read ("+strings.TrimPrefix(err.Error(), "stat "+p+": ")+
				"); give the path of a plugin executable")
		case fi.IsDir():
			return bad(option, value, "it is a directory; give the path of a plugin executable (a directory of plugins is PluginDir)")
		case fi.Mode().Perm()&0o111 == 0:
			return bad(option, value, "it is not executable (mode "+fi.Mode().String()+"); give the path of a plugin executable")
		}
		abs := absPath(p)
		if j, dup := seen[abs]; dup {
			return bad(option, value, fmt.Sprintf("Plugins[%d] names the same file; list each plugin once", j))
		}
		seen[abs] = i
		// LoadDir skips the files whose names begin with a dot: such a
		// plugin is loaded only when listed.
		if dir != "" && filepath.Dir(abs) == dir && !strings.HasPrefix(filepath.Base(abs), ".") {
			return bad(option, value, "it is in PluginDir, which loads it already; list it once")
		}
	}
	if len(o.PluginChecksums) > 0 {
		keys := o.pluginKeys()
		names := make([]string, 0, len(o.PluginChecksums))
		for name := range o.PluginChecksums {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !keys[name] {
				return bad(fmt.Sprintf("PluginChecksums[%q]", name), fmt.Sprintf("%q", o.PluginChecksums[name]),
					"its key names no plugin in Plugins or PluginDir, so the plugin it is meant for would run unchecked; "+
						"key it by the plugin's path or file name")
			}
		}
	}
	for i, kv := range o.PluginEnv {
		if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" || strings.ContainsRune(kv, 0) {
			return bad(fmt.Sprintf("PluginEnv[%d]", i), fmt.Sprintf("%q", kv), `write each variable as "KEY=value"`)
		}
	}
	return nil
}

// pluginKeys returns what a checksum may be keyed by (as plugins.Host
// looks it up): each plugin's path as given, its absolute path and its
// file name, for Plugins and the files in PluginDir that LoadDir would
// load (not those whose names begin with a dot).
func (o Options) pluginKeys() map[string]bool {
	keys := map[string]bool{}
	add := func(path string) {
		keys[path], keys[absPath(path)], keys[filepath.Base(path)] = true, true, true
	}
	for _, p := range o.Plugins {
		add(p)
	}
	if o.PluginDir != "" {
		entries, _ := os.ReadDir(o.PluginDir) // readable: validate checked it
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") { // LoadDir skips it
				add(filepath.Join(o.PluginDir, e.Name()))
			}
		}
	}
	return keys
}

// absPath is path made absolute, or path itself when it cannot be.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
