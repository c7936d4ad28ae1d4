package eventql

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// checkArg checks a runtime argument against a parameter.
func checkArg(fn string, i int, p param, v Value, pos Pos) error {
	if p == nil || v.isNull() {
		return nil
	}
	for _, k := range p {
		if k == v.kind {
			return nil
		}
	}
	return runtimeErr(pos, "%s expects %s as argument %d, got %s", fn, p, i+1, v.kind)
}

func (ex *execution) call(x *Call, en *env) (Value, error) {
	fn := functions[x.Name]
	if x.Name == "IF" {
		c, err := ex.eval(x.Args[0], en)
		if err != nil {
			return Null, err
		}
		if err := checkArg("IF", 0, pBool, c, x.Pos); err != nil {
			return Null, err
		}
		if c.kind == KindBool && c.bool() {
			return ex.eval(x.Args[1], en)
		}
		return ex.eval(x.Args[2], en)
	}
	args := make([]Value, len(x.Args))
	for i, a := range x.Args {
		v, err := ex.eval(a, en)
		if err != nil {
			return Null, err
		}
		if err := checkArg(x.Name, i, fn.params[i], v, x.Pos); err != nil {
			return Null, err
		}
		args[i] = v
	}
	for _, a := range args {
		if a.isNull() {
			return Null, nil
		}
	}
	return ex.apply(x.Name, args, x.Pos)
}

func toInt(f float64, pos Pos) (Value, error) {
	if f >= -9223372036854775808.0 && f < 9223372036854775808.0 {
		return Int(int64(f)), nil
	}
	return Null, runtimeErr(pos, "number %s is out of the INT range", jsonscan.AppendFloat(nil, f))
}

func (ex *execution) apply(name string, a []Value, pos Pos) (Value, error) {
	switch name {
	case "ABS":
		if a[0].kind == KindFloat {
			return Float(math.Abs(a[0].f)), nil
		}
		if a[0].i == math.MinInt64 {
			return Null, runtimeErr(pos, "integer overflow")
		}
		if a[0].i < 0 {
			return Int(-a[0].i), nil
		}
		return a[0], nil
	case "CEIL", "FLOOR", "ROUND":
		if a[0].kind == KindInt {
			return a[0], nil
		}
		return toInt(map[string]func(float64) float64{"CEIL": math.Ceil, "FLOOR": math.Floor, "ROUND": math.Round}[name](a[0].f), pos)
	case "POW":
		return finite(math.Pow(a[0].num(), a[1].num()), pos)
	case "SQRT":
		if a[0].num() < 0 {
			return Null, runtimeErr(pos, "square root of a negative number")
		}
		return finite(math.Sqrt(a[0].num()), pos)
	case "EXP":
		return finite(math.Exp(a[0].num()), pos)
	case "COS":
		return finite(math.Cos(a[0].num()), pos)
	case "PI":
		return Float(math.Pi), nil
	case "RAND":
		return Float(ex.rand.Float64()), nil
	case "LEN":
		return Int(int64(utf8.RuneCountInString(a[0].s))), nil
	case "UPPER":
		return String(strings.ToUpper(a[0].s)), nil
	case "LOWER":
		return String(strings.ToLower(a[0].s)), nil
	case "TRIM":
		return String(strings.TrimFunc(a[0].s, unicode.IsSpace)), nil
	case "LTRIM":
		return String(strings.TrimLeftFunc(a[0].s, unicode.IsSpace)), nil
	case "RTRIM":
		return String(strings.TrimRightFunc(a[0].s, unicode.IsSpace)), nil
	case "SUBSTRING":
		runes := []rune(a[0].s)
		start := min(max(a[1].i, 0), int64(len(runes)))
		end := int64(len(runes))
		if len(a) == 3 {
			end = min(start+max(a[2].i, 0), end)
		}
		return String(string(runes[start:end])), nil
	case "INSTR":
		i := strings.Index(a[0].s, a[1].s)
		if i < 0 {
			return Int(-1), nil
		}
		return Int(int64(utf8.RuneCountInString(a[0].s[:i]))), nil
	case "REPLACE":
		if a[1].s == "" {
			return a[0], nil
		}
		return String(strings.ReplaceAll(a[0].s, a[1].s, a[2].s)), nil
	case "STARTSWITH":
		return Bool(strings.HasPrefix(a[0].s, a[1].s)), nil
	case "ENDSWITH":
		return Bool(strings.HasSuffix(a[0].s, a[1].s)), nil
	case "NOW":
		return dateTime(ex.now), nil
	case "YEAR", "MONTH", "DAY", "WEEKDAY":
		t := a[0].t
		return Int(int64(map[string]int{"YEAR": t.Year(), "MONTH": int(t.Month()), "DAY": t.Day(), "WEEKDAY": int(t.Weekday())}[name])), nil
	case "HOUR", "MINUTE", "SECOND":
		ns := a[0].i
		if a[0].kind == KindDateTime {
			t := a[0].t
			ns = int64(t.Hour())*int64(time.Hour) + int64(t.Minute())*int64(time.Minute) + int64(t.Second())*int64(time.Second)
		}
		d := time.Duration(ns)
		return Int(map[string]int64{"HOUR": int64(d / time.Hour), "MINUTE": int64(d/time.Minute) % 60, "SECOND": int64(d/time.Second) % 60}[name]), nil
	}
	return Null, runtimeErr(pos, "unknown function '%s'", name)
}

var (
	floatText    = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
	intText      = regexp.MustCompile(`^[+-]?[0-9]+$`)
	dateTimeText = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$`)
	dateText     = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})$`)
	timeText     = regexp.MustCompile(`^(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?$`)
)

// convert is x AS to (§6).
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
