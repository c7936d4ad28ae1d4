package eventql

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

var (
	floatText    = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
	intText      = regexp.MustCompile(`^[+-]?[0-9]+$`)
	dateTimeText = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$`)
	dateText     = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})$`)
	timeText     = regexp.MustCompile(`^(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?$`)
)

// convert is x AS to (docs/eventql.md §6).
func convert(v Value, to Kind, pos Pos) (Value, error) {
	if v.isNull() || v.kind == to {
		return v, nil
	}
	fail := func() (Value, error) {
		if v.kind == KindString {
			return Null, runtimeErr(pos, "cannot convert STRING %s to %s", strconv.Quote(v.s), to)
		}
		return Null, runtimeErr(pos, "cannot convert %s to %s", v.kind, to)
	}
	if v.kind == KindArray || v.kind == KindRecord {
		return fail()
	}
	switch to {
	case KindString:
		switch v.kind {
		case KindInt:
			return String(strconv.FormatInt(v.i, 10)), nil
		case KindFloat:
			return String(string(jsonscan.AppendFloat(nil, v.f))), nil
		case KindBool:
			return String(strconv.FormatBool(v.bool())), nil
		}
		return String(v.text()), nil
	case KindInt:
		switch v.kind {
		case KindFloat:
			return toInt(math.Trunc(v.f), pos)
		case KindString:
			if intText.MatchString(v.s) {
				if i, err := strconv.ParseInt(v.s, 10, 64); err == nil {
					return Int(i), nil
				}
			}
		}
	case KindFloat:
		switch v.kind {
		case KindInt:
			return Float(float64(v.i)), nil
		case KindString:
			if floatText.MatchString(v.s) {
				if f, err := strconv.ParseFloat(v.s, 64); err == nil && !math.IsInf(f, 0) {
					return Float(f), nil
				}
			}
		}
	case KindBool:
		if v.kind == KindString {
			switch {
			case strings.EqualFold(v.s, "true"):
				return Bool(true), nil
			case strings.EqualFold(v.s, "false"):
				return Bool(false), nil
			}
		}
	case KindDateTime:
		switch v.kind {
		case KindDate:
			return dateTime(v.t), nil
		case KindString:
			if t, ok := parseDateTime(v.s); ok {
				return dateTime(t), nil
			}
		}
	case KindDate:
		switch v.kind {
		case KindDateTime:
			return date(v.t), nil
		case KindString:
			if m := dateText.FindStringSubmatch(v.s); m != nil {
				if t, ok := validDate(m[1], m[2], m[3]); ok {
					return date(t), nil
				}
			} else if t, ok := parseDateTime(v.s); ok {
				return date(t), nil
			}
		}
	case KindTime:
		switch v.kind {
		case KindDateTime:
			t := v.t
			return timeOfDay(int64(t.Hour())*int64(time.Hour) + int64(t.Minute())*int64(time.Minute) + int64(t.Second())*int64(time.Second) + int64(t.Nanosecond())), nil
		case KindString:
			if m := timeText.FindStringSubmatch(v.s); m != nil {
				h, _ := strconv.Atoi(m[1])
				mi, _ := strconv.Atoi(m[2])
				s, _ := strconv.Atoi(m[3])
				if h <= 23 && mi <= 59 && s <= 59 {
					return timeOfDay(int64(h)*int64(time.Hour) + int64(mi)*int64(time.Minute) + int64(s)*int64(time.Second) + fraction(m[4])), nil
				}
			}
		}
	}
	return fail()
}

// fraction turns ".123" into nanoseconds.
func fraction(f string) int64 {
	if f == "" {
		return 0
	}
	digits := f[1:] + strings.Repeat("0", 10-len(f))
	ns, _ := strconv.ParseInt(digits[:9], 10, 64)
	return ns
}

func validDate(ys, ms, ds string) (time.Time, bool) {
	y, _ := strconv.Atoi(ys)
	m, _ := strconv.Atoi(ms)
	d, _ := strconv.Atoi(ds)
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	return t, y >= 1 && m >= 1 && m <= 12 && t.Day() == d && t.Month() == time.Month(m)
}

// parseDateTime parses RFC 3339 with an offset or Z, converted to UTC.
func parseDateTime(s string) (time.Time, bool) {
	m := dateTimeText.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, false
	}
	day, ok := validDate(m[1], m[2], m[3])
	h, _ := strconv.Atoi(m[4])
	mi, _ := strconv.Atoi(m[5])
	sec, _ := strconv.Atoi(m[6])
	if !ok || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(sec)*time.Second + time.Duration(fraction(m[7])))
	if off := m[8]; off != "Z" && off != "z" {
		oh, _ := strconv.Atoi(off[1:3])
		om, _ := strconv.Atoi(off[4:6])
		if oh > 23 || om > 59 {
			return time.Time{}, false
		}
		d := time.Duration(oh)*time.Hour + time.Duration(om)*time.Minute
		if off[0] == '+' {
			d = -d
		}
		t = t.Add(d)
	}
	if y := t.Year(); y < 1 || y > 9999 {
		return time.Time{}, false
	}
	return t, true
}
