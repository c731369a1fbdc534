package cron

import (
	"testing"
	"time"
)

func TestDbg(t *testing.T) {
	s, _ := Parse("0 3 * * *", "Australia/Lord_Howe")
	loc := s.Location()
	at := time.Date(2024, 12, 31, 12, 0, 0, 0, loc)
	prev := time.Time{}
	for i := 0; i < 400; i++ {
		next := s.Next(at)
		if !prev.IsZero() && next.In(loc).YearDay()-prev.In(loc).YearDay() != 1 {
			t.Logf("%v -> %v", prev.In(loc), next.In(loc))
		}
		prev = next
		at = next
		if next.Year() > 2025 {
			break
		}
	}
}
