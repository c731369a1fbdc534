package docs

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// ChunkSize is the size of one stored piece of a file. Each chunk is its
// own key; a document record only names its file.
const ChunkSize = 256 << 10

// chunksPerTxn bounds one commit to 512 KiB of file bytes, well under what
// a Badger transaction may write with the default store (15% of an 8 MiB
// memtable), leaving room for the document's own records.
const chunksPerTxn = 2

// Key spaces of files under a tenant, and of unfinished uploads under
// store.System.
const (
	spaceFile    = "docfile"
	spacePending = "docfile-pending"
)

func chunkKey(tenant, fileID string, n int) []byte {
	return store.Key(tenant, spaceFile, fileID, n)
}

func pendingKey(tenant, fileID string) []byte {
	return store.Key(store.System, spacePending, tenant, fileID)
}

type pending struct {
	At time.Time `json:"at"`
}

// staged is a file on its way into the store.
type staged struct {
	fileID string
	chunks int
	// inline files are small enough to be written by the transaction that
	// records them; others were written beforehand and are pending.
	inline bool
	data   []byte
}

// stageFile prepares data for storing under a new file id. A file of at
// most chunksPerTxn chunks is written later, inside the transaction that
// records it (commit). A larger one is written now, a few chunks per
// commit, after a pending mark; commit then clears the mark, and Sweep
// removes files left pending by a crash or a failed upload.
func (s *Service) stageFile(ctx context.Context, tenant string, data []byte) (*staged, error) {
	now := s.clock.Now()
	st := &staged{fileID: s.ids.New("fil", now), chunks: (len(data) + ChunkSize - 1) / ChunkSize, data: data}
	if st.chunks <= chunksPerTxn {
		st.inline = true
		return st, nil
	}
	if _, _, err := s.putFile(ctx, tenant, st.fileID, data); err != nil {
		return nil, err
	}
	return st, nil
}

// commit, inside the transaction that records the file on a document,
// writes an inline file or clears a pending file's mark.
func (st *staged) commit(tx store.Txn, tenant string) error {
	if !st.inline {
		return tx.Delete(pendingKey(tenant, st.fileID))
	}
	return writeChunks(tx, tenant, st.fileID, st.data, 0, st.chunks)
}

// abandon removes a staged file whose document was not recorded.
func (s *Service) abandon(tenant string, st *staged) {
	if !st.inline {
		s.dropFile(tenant, st.fileID)
	}
}

func writeChunks(tx store.Txn, tenant, fileID string, data []byte, first, end int) error {
	for n := first; n < end; n++ {
		part := data[n*ChunkSize : min((n+1)*ChunkSize, len(data))]
		if err := tx.Set(chunkKey(tenant, fileID, n), part); err != nil {
			return err
		}
	}
	return nil
}

// putFile writes data as chunks of fileID, chunksPerTxn per commit, after
// marking the file pending.
func (s *Service) putFile(ctx context.Context, tenant, fileID string, data []byte) (string, int, error) {
	mark, _ := json.Marshal(pending{At: s.clock.Now().UTC()})
	if err := s.st.Update(ctx, func(tx store.Txn) error {
		return tx.Set(pendingKey(tenant, fileID), mark)
	}); err != nil {
		return "", 0, errors.Wrap(err, "mark upload")
	}
	chunks := (len(data) + ChunkSize - 1) / ChunkSize
	for first := 0; first < chunks; first += chunksPerTxn {
		err := s.st.Update(ctx, func(tx store.Txn) error {
			return writeChunks(tx, tenant, fileID, data, first, min(first+chunksPerTxn, chunks))
		})
		if err != nil {
			s.dropFile(tenant, fileID)
			return "", 0, errors.Wrap(err, "store file")
		}
	}
	return fileID, chunks, nil
}

// dropFile deletes a file that no document names (best effort, with its
// own context: it runs after the caller's request may have ended).
func (s *Service) dropFile(tenant, fileID string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.deleteFile(ctx, tenant, fileID); err != nil {
		s.log.Warn("docs: dropping an unused upload failed; Sweep will retry", "tenant", tenant, "file", fileID, "error", err)
	}
}

func (s *Service) deleteFile(ctx context.Context, tenant, fileID string) error {
	prefix := store.Key(tenant, spaceFile, fileID)
	for {
		var keys [][]byte
		if err := s.st.View(ctx, func(r store.Reader) error {
			return r.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(k, _ []byte) error {
				keys = append(keys, append([]byte(nil), k...))
				if len(keys) == 64 {
					return store.ErrStop
				}
				return nil
			})
		}); err != nil {
			return err
		}
		last := len(keys) < 64
		if err := s.st.Update(ctx, func(tx store.Txn) error {
			for _, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			if last {
				return tx.Delete(pendingKey(tenant, fileID))
			}
			return nil
		}); err != nil {
			return err
		}
		if last {
			return nil
		}
	}
}

// Sweep deletes the files of uploads that began more than olderThan ago
// and never became a document version (the process died mid-upload, or
// the final commit failed); olderThan 0 deletes every such file. It
// returns how many it deleted. Hosts call it now and then (bas does at
// open); it is safe while uploads run, as long as olderThan exceeds the
// longest upload.
func (s *Service) Sweep(ctx context.Context, olderThan time.Duration) (int, error) {
	all := olderThan <= 0
	cutoff := s.clock.Now().Add(-olderThan)
	type stale struct{ tenant, fileID string }
	var found []stale
	err := s.st.View(ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, spacePending)}, func(k, v []byte) error {
			var p pending
			if err := json.Unmarshal(v, &p); err != nil || all || p.At.Before(cutoff) {
				parts, derr := store.DecodeKey(k)
				if derr != nil || len(parts) != 4 {
					return nil
				}
				t, _ := parts[2].(string)
				f, _ := parts[3].(string)
				found = append(found, stale{t, f})
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	for i, f := range found {
		if err := s.deleteFile(ctx, f.tenant, f.fileID); err != nil {
			return i, err
		}
	}
	return len(found), nil
}

// writeFile writes a stored file to w, a few chunks per read transaction.
func (s *Service) writeFile(ctx context.Context, tenant string, v storedVersion, w io.Writer) error {
	for first := 0; first < v.Chunks; first += chunksPerTxn {
		var parts [][]byte
		err := s.st.View(ctx, func(r store.Reader) error {
			for n := first; n < min(first+chunksPerTxn, v.Chunks); n++ {
				b, err := r.Get(chunkKey(tenant, v.FileID, n))
				if err != nil {
					return errors.Wrapf(err, "chunk %d of file %s", n, v.FileID)
				}
				parts = append(parts, b)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return errors.Wrap(err, "write file")
			}
		}
	}
	return nil
}
