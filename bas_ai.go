package bas

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"

	"github.com/bas-platform/bas/internal/ai"
	"github.com/bas-platform/bas/runengine"
	"github.com/cockroachdb/errors"
)

// secretKeyFile is where Open keeps the key that seals secrets (AI API
// keys) when Options.SecretKey is not given.
const secretKeyFile = "secret.key"

// secretKey returns Options.SecretKey; else, for an in-memory workspace (or
// a host's own Store without a Dir), a fresh random key; else the key in
// <Dir>/secret.key, made (mode 0600) the first time.
func secretKey(opts Options) ([]byte, error) {
	if len(opts.SecretKey) > 0 {
		if len(opts.SecretKey) != 32 {
			return nil, errors.Newf("bas: Options.SecretKey must be 32 bytes, not %d", len(opts.SecretKey))
		}
		return opts.SecretKey, nil
	}
	key := make([]byte, 32)
	if opts.InMemory || opts.Store != nil && opts.dirDefaulted {
		if !opts.InMemory {
			opts.Logger.Warn("no Options.SecretKey and no Dir: AI API keys are sealed with a key that lasts until the workspace closes; set Options.SecretKey to keep them")
		}
		_, err := rand.Read(key)
		return key, errors.Wrap(err, "bas: make a secret key")
	}
	path := filepath.Join(filepath.Clean(opts.Dir), secretKeyFile)
	if b, err := os.ReadFile(path); err == nil {
		if len(b) != 32 {
			return nil, errors.Newf("bas: %s holds %d bytes; a secret key is 32", path, len(b))
		}
		return b, nil
	} else if !os.IsNotExist(err) {
		return nil, errors.Wrapf(err, "bas: read %s", path)
	}
	if _, err := rand.Read(key); err != nil {
		return nil, errors.Wrap(err, "bas: make a secret key")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, errors.Wrapf(err, "bas: make %s", filepath.Dir(path))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if os.IsExist(err) { // another process made it first
			return secretKey(opts)
		}
		return nil, errors.Wrapf(err, "bas: write %s", path)
	}
	if _, err := f.Write(key); err != nil {
		_ = f.Close()
		return nil, errors.Wrapf(err, "bas: write %s", path)
	}
	return key, errors.Wrapf(f.Close(), "bas: write %s", path)
}

// openAI wires the AI connector and registers its provider.
func (ws *Workspace) openAI() error {
	key, err := secretKey(ws.opts)
	if err != nil {
		return err
	}
	svc, err := ai.New(ai.Config{Store: ws.store, Key: key, Clock: ws.opts.Clock, Logger: ws.opts.Logger,
		Events: appEvents{ws}, Client: ws.opts.AIClient,
		RunOf: func(ctx context.Context) (string, string, bool) {
			info, ok := runengine.RunFromContext(ctx)
			return info.ID, info.StepKey, ok
		}})
	if err != nil {
		return err
	}
	ws.ai = svc
	return errors.Wrap(ws.registry.Register(svc.Provider()), "register the AI connector")
}
