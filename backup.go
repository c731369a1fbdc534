package bas

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/cockroachdb/errors"
)

// The backup format: a header, then every key and value of the store in key
// order (each as a uvarint length and the bytes), then an empty key, the
// number of entries (8 bytes, big-endian) and the SHA-256 of everything
// before it. Restore refuses a stream that breaks off or does not add up.
var backupMagic = []byte("BASBACKUP\x00\x01")

const (
	backupMaxKey   = 1 << 16
	backupMaxValue = 1 << 30
	// restoreBatch bounds one restore transaction (entries and bytes).
	restoreBatchEntries = 1000
	restoreBatchBytes   = 4 << 20
)

// Backup writes a consistent snapshot of all the workspace's data (every
// tenant's) to w while the workspace keeps serving: it reads one store
// snapshot, so runs, requests and timers go on, and what the backup holds
// is exactly what was committed when it began. Restore reads it back into
// an empty directory. Canceling ctx stops it with ctx's error.
func (ws *Workspace) Backup(ctx context.Context, w io.Writer) error {
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<20)
	if _, err := bw.Write(backupMagic); err != nil {
		return errors.Wrap(err, "write backup")
	}
	var n uint64
	var lenBuf [binary.MaxVarintLen64]byte
	put := func(b []byte) error {
		if _, err := bw.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(b)))]); err != nil {
			return err
		}
		_, err := bw.Write(b)
		return err
	}
	err := ws.store.View(ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{}, func(key, value []byte) error {
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			n++
			if err := put(key); err != nil {
				return err
			}
			return put(value)
		})
	})
	if err != nil {
		return errors.Wrap(err, "write backup")
	}
	var trailer [9]byte // the empty key, then the count
	binary.BigEndian.PutUint64(trailer[1:], n)
	if _, err := bw.Write(trailer[:]); err != nil {
		return errors.Wrap(err, "write backup")
	}
	if err := bw.Flush(); err != nil {
		return errors.Wrap(err, "write backup")
	}
	if _, err := w.Write(h.Sum(nil)); err != nil {
		return errors.Wrap(err, "write backup")
	}
	return nil
}

// Restore reads a backup made by Workspace.Backup into dir, which must be
// empty or not exist; Open with Options.Dir = dir then opens the restored
// workspace (its runs resume where they were). A stream that is not a
// backup, breaks off or does not match its checksum is refused, and dir is
// left empty.
func Restore(ctx context.Context, r io.Reader, dir string) (err error) {
	dir = filepath.Clean(dir)
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return errors.Newf("restore: %s is not empty; restore into an empty or new directory", dir)
	} else if err != nil && !os.IsNotExist(err) {
		return errors.Wrapf(err, "restore into %s", dir)
	}
	st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		return errors.Wrapf(err, "restore: open store in %s", dir)
	}
	defer func() {
		if cerr := st.Close(); err == nil && cerr != nil {
			err = errors.Wrap(cerr, "restore: close store")
		}
		if err != nil {
			clearDir(dir)
		}
	}()
	h := sha256.New()
	br := &hashReader{r: bufio.NewReaderSize(r, 1<<20), h: h}
	magic := make([]byte, len(backupMagic))
	if _, err := io.ReadFull(br, magic); err != nil || !bytes.Equal(magic, backupMagic) {
		return errors.New("restore: the stream is not a bas backup")
	}
	type kv struct{ k, v []byte }
	var batch []kv
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := st.Update(ctx, func(tx store.Txn) error {
			for _, e := range batch {
				if err := tx.Set(e.k, e.v); err != nil {
					return err
				}
			}
			return nil
		})
		batch, size = batch[:0], 0
		return err
	}
	var n uint64
	for {
		key, err := readChunk(br, backupMaxKey)
		if err != nil {
			return err
		}
		if len(key) == 0 {
			break
		}
		value, err := readChunk(br, backupMaxValue)
		if err != nil {
			return err
		}
		n++
		batch = append(batch, kv{key, value})
		size += len(key) + len(value)
		if len(batch) >= restoreBatchEntries || size >= restoreBatchBytes {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return errors.Wrap(err, "restore: write")
			}
		}
	}
	var count [8]byte
	if _, err := io.ReadFull(br, count[:]); err != nil {
		return errors.New("restore: the backup breaks off before its end")
	}
	sum := h.Sum(nil)
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(br.r, want); err != nil {
		return errors.New("restore: the backup breaks off before its checksum")
	}
	if binary.BigEndian.Uint64(count[:]) != n || !bytes.Equal(sum, want) {
		return errors.New("restore: the backup does not match its checksum")
	}
	if err := flush(); err != nil {
		return errors.Wrap(err, "restore: write")
	}
	return nil
}

// readChunk reads one uvarint-length-prefixed chunk of at most max bytes.
func readChunk(r *hashReader, max uint64) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, errors.New("restore: the backup breaks off")
	}
	if n > max {
		return nil, errors.Newf("restore: an entry of %d bytes is larger than a backup holds", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, errors.New("restore: the backup breaks off")
	}
	return b, nil
}

// hashReader hashes what is read through it.
type hashReader struct {
	r *bufio.Reader
	h hash.Hash
}

func (r *hashReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.h.Write(p[:n])
	return n, err
}

func (r *hashReader) ReadByte() (byte, error) {
	b, err := r.r.ReadByte()
	if err == nil {
		r.h.Write([]byte{b})
	}
	return b, err
}

// clearDir empties dir after a failed restore.
func clearDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
