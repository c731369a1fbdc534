package extract

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/ascii85"
	"io"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/ledongthuc/pdf"
)

// Budget bounds the work of reading one file, so that a small file cannot
// take the memory or the time of the process: a PDF's Flate streams may
// inflate a thousand times. The zero value of a field means its default.
type Budget struct {
	// MaxStreamBytes bounds the decompressed bytes of one PDF stream the
	// text is read from (a page's content, a font's character map, an
	// object stream). Defaults to 8 MiB.
	MaxStreamBytes int64
	// MaxBytes bounds the decompressed bytes of all of a document's
	// streams together, counted each time one is read. Defaults to 64 MiB.
	MaxBytes int64
	// MaxPages bounds the pages of a PDF. Defaults to 500.
	MaxPages int
	// MaxTextBytes bounds the text of a document (any type), which
	// extraction searches field by field. Defaults to 4 MiB.
	MaxTextBytes int
	// Timeout bounds the time reading takes, within the caller's context.
	// Defaults to 20 seconds.
	Timeout time.Duration
}

// The defaults of Budget.
const (
	DefaultMaxStreamBytes = 8 << 20
	DefaultMaxBytes       = 64 << 20
	DefaultMaxPages       = 500
	DefaultMaxTextBytes   = 4 << 20
	DefaultTimeout        = 20 * time.Second
)

func (b Budget) withDefaults() Budget {
	if b.MaxStreamBytes <= 0 {
		b.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if b.MaxBytes <= 0 {
		b.MaxBytes = DefaultMaxBytes
	}
	if b.MaxPages <= 0 {
		b.MaxPages = DefaultMaxPages
	}
	if b.MaxTextBytes <= 0 {
		b.MaxTextBytes = DefaultMaxTextBytes
	}
	if b.Timeout <= 0 {
		b.Timeout = DefaultTimeout
	}
	return b
}

// ErrOverBudget marks a file whose reading would exceed its Budget; the
// error's message says which bound and where, for a person.
var ErrOverBudget = errors.New("extract: over budget")

func overBudgetf(format string, args ...any) error {
	return errors.Mark(errors.Newf(format, args...), ErrOverBudget)
}

// spend counts the decompressed bytes of one document against its budget.
type spend struct {
	ctx  context.Context
	b    Budget
	used int64
}

// drain reads r to its end (what the text reader would read) and counts
// its bytes; what stream names the stream for the error ("page 3's
// content"). A stream that does not decode is left to the text reader,
// which reports it.
func (s *spend) drain(r io.Reader, what string) error {
	limit := min(s.b.MaxStreamBytes, s.b.MaxBytes-s.used)
	n, err := io.Copy(io.Discard, &ctxReader{ctx: s.ctx, r: io.LimitReader(r, limit+1)})
	s.used += n
	if cerr := s.ctx.Err(); cerr != nil {
		return s.timeout(cerr)
	}
	switch {
	case n > s.b.MaxStreamBytes:
		return overBudgetf("%s inflates to more than %d bytes (the limit of one stream)", what, s.b.MaxStreamBytes)
	case s.used > s.b.MaxBytes:
		return overBudgetf("the document's streams inflate to more than %d bytes (the limit of one document)", s.b.MaxBytes)
	}
	_ = err // a damaged stream: the text reader reports it
	return nil
}

// timeout turns the context's error into the error FromFile returns: past
// the budget's own deadline it is over budget; the caller's cancellation
// or deadline is returned as it is.
func (s *spend) timeout(cerr error) error {
	if errors.Is(context.Cause(s.ctx), errBudgetTime) {
		return overBudgetf("reading the document takes longer than %s", s.b.Timeout)
	}
	return cerr
}

var errBudgetTime = errors.New("extract: time budget spent")

// checkText reports text beyond the budget's MaxTextBytes.
func (b Budget) checkText(n int) error {
	if n > b.MaxTextBytes {
		return overBudgetf("the document's text is more than %d bytes (the limit of one document)", b.MaxTextBytes)
	}
	return nil
}

// ctxReader stops reading once its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ctxReaderAt is the file as the PDF reader sees it: every read fails
// once the context is done, so the reader stops within one buffer of work.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c *ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// checkPage drains what Page.Content reads of page n (its content
// streams and its fonts' character maps) before it is read, so that the
// text reader, which keeps everything it decodes, only ever sees streams
// within the budget.
func (s *spend) checkPage(p pdf.Page, n int) error {
	contents := p.V.Key("Contents")
	what := "page " + strconv.Itoa(n) + "'s content"
	switch contents.Kind() {
	case pdf.Stream:
		if err := s.drain(contents.Reader(), what); err != nil {
			return err
		}
	case pdf.Array:
		for i := 0; i < contents.Len(); i++ {
			if err := s.drain(contents.Index(i).Reader(), what); err != nil {
				return err
			}
		}
	}
	fonts := p.Resources().Key("Font")
	for _, name := range fonts.Keys() {
		if cmap := fonts.Key(name).Key("ToUnicode"); cmap.Kind() == pdf.Stream {
			if err := s.drain(cmap.Reader(), "the character map of font "+name+" on page "+strconv.Itoa(n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkObjectStreams inflates, before the PDF reader opens the file, every
// Flate stream in it that the reader may decode whole into objects
// (object and cross-reference streams, and any stream not plainly an
// image or a font program, which text reading never decodes). A stream is
// found by its "stream" keyword; its dictionary is what precedes it back
// to its "obj".
func (s *spend) checkObjectStreams(data []byte) error {
	const kw = "stream"
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(kw))
		if j < 0 {
			return nil
		}
		at := i + j
		i = at + len(kw)
		if at >= 3 && string(data[at-3:at]) == "end" {
			continue
		}
		start := i
		if start < len(data) && data[start] == '\r' {
			start++
		}
		if start < len(data) && data[start] == '\n' {
			start++
		}
		if start == i { // "stream" inside some other token
			continue
		}
		back := data[max(0, at-4096):at]
		what := "a stream at byte " + strconv.Itoa(at)
		if k := bytes.LastIndex(back, []byte("obj")); k >= 0 {
			if f := bytes.Fields(back[max(0, k-24):k]); len(f) >= 2 {
				what = "object " + string(f[len(f)-2]) + "'s stream"
			}
			back = back[k:]
		}
		if !bytes.Contains(back, []byte("ObjStm")) && !bytes.Contains(back, []byte("XRef")) && skippable(back) {
			continue
		}
		var raw io.Reader = bytes.NewReader(data[start:])
		if bytes.Contains(back, []byte("ASCII85Decode")) || bytes.Contains(back, []byte("/A85")) {
			raw = ascii85.NewDecoder(&a85Reader{r: raw})
		}
		zr, err := zlib.NewReader(raw)
		if err != nil {
			continue // not Flate here: the text reader reads it under checkPage or not at all
		}
		if err := s.drain(zr, what); err != nil {
			return err
		}
	}
}

// a85Reader passes ASCII85 text up to its "~>" end mark.
type a85Reader struct {
	r    io.Reader
	done bool
}

func (a *a85Reader) Read(p []byte) (int, error) {
	if a.done {
		return 0, io.EOF
	}
	n, err := a.r.Read(p)
	if i := bytes.Index(p[:n], []byte("~")); i >= 0 {
		a.done = true
		return i, nil
	}
	return n, err
}

// skippable reports whether a stream dictionary is an image's or a font
// program's: text reading never decodes those.
func skippable(dict []byte) bool {
	for _, m := range [][]byte{[]byte("/Image"), []byte("/Length1"), []byte("/Length2"), []byte("/Length3"),
		[]byte("/Type1C"), []byte("/CIDFontType0C"), []byte("/OpenType")} {
		if bytes.Contains(dict, m) {
			return true
		}
	}
	return false
}
