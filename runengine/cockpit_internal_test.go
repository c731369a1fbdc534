package runengine

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// TestCockpitDailyWindow reads the 30-day series from counters of days
// just inside and just outside it, and from nodes' shares of them.
func TestCockpitDailyWindow(t *testing.T) {
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	day := func(d int) string { return now.Add(time.Duration(d) * 24 * time.Hour).Format("2006-01-02") }
	share := string(store.Key("node-2"))
	const tenant = "t-daily"
	counters := map[string]int64{
		counterKey(tenant, "completed", day(-30)):         100, // the day before the oldest
		counterKey(tenant, "completed", day(-30)) + share: 200,
		counterKey(tenant, "completed", day(-29)):         1, // the oldest
		counterKey(tenant, "completed", day(-29)) + share: 2,
		counterKey(tenant, "minutes", day(-29)):           7,
		counterKey(tenant, "completed", day(0)):           3, // today
		counterKey(tenant, "minutes", day(0)) + share:     11,
		counterKey(tenant, "completed", day(1)):           1000, // tomorrow
		counterKey("t-dailz", "completed", day(0)):        5000, // another tenant
	}
	err = st.Update(context.Background(), func(tx store.Txn) error {
		for k, v := range counters {
			if err := tx.Set([]byte(k), binary.BigEndian.AppendUint64(nil, uint64(v))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := New(Config{Store: st, Clock: clk,
		Capabilities: registry.New(registry.Config{Store: st, Clock: clk}),
		Processes:    process.NewService(process.Config{Store: st, Clock: clk})})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c, err := eng.Cockpit(context.Background(), tenant, Viewer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]DayCount, 30)
	for i := range want {
		want[i] = DayCount{Date: day(i - 29)}
	}
	want[0] = DayCount{Date: day(-29), Completed: 3, MinutesSaved: 7}
	want[29] = DayCount{Date: day(0), Completed: 3, MinutesSaved: 11}
	if diff := cmp.Diff(want, c.Daily); diff != "" {
		t.Errorf("daily series (-want +got):\n%s", diff)
	}
	if c.Completed30d != 6 || c.MinutesSaved30d != 18 {
		t.Errorf("completed_30d %d, minutes_saved_30d %d; want 6, 18", c.Completed30d, c.MinutesSaved30d)
	}
}

// TestCockpitWindowOf compares the cockpit's window, formatted once per
// day, with the 30 dates formatted at each call, at times around a day's
// edges, before 1970 and in another zone, in an order that makes it change
// its day at every call and back.
func TestCockpitWindowOf(t *testing.T) {
	east := time.FixedZone("east", 11*3600)
	times := []time.Time{
		time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 4, 1, 9, 0, 0, 0, east), // 2026-03-31 22:00 UTC
		time.Date(2026, 3, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 30, 23, 59, 59, 0, time.UTC),
	}
	for _, now := range times {
		for range 2 { // made, then held
			var want [30]string
			wantIndex := map[string]int{}
			u := now.UTC()
			for d := 0; d < 30; d++ {
				day := u.Add(-time.Duration(d) * 24 * time.Hour).Format("2006-01-02")
				want[29-d] = day
				wantIndex[day] = 29 - d
			}
			w := windowOf(now)
			if diff := cmp.Diff(want, w.dates); diff != "" {
				t.Errorf("%v: dates (-want +got):\n%s", now, diff)
			}
			if diff := cmp.Diff(wantIndex, w.index); diff != "" {
				t.Errorf("%v: index (-want +got):\n%s", now, diff)
			}
			if before := u.Add(-30 * 24 * time.Hour).Format("2006-01-02"); w.before != before {
				t.Errorf("%v: before %s, want %s", now, w.before, before)
			}
		}
	}
}
