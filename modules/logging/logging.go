package logging

import (
	"io"
	"os"

	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
)

// TimeLayout is the layout of the time key: RFC 3339 in UTC with nanoseconds.
const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// EncoderConfig is the configuration of zap's JSON encoder for everything
// after time and level, which NewEncoder writes first.
func EncoderConfig() zapcore.EncoderConfig {
	return zapcore.EncoderConfig{
		NameKey:        "logger",
		CallerKey:      "caller",
		MessageKey:     "message",
		StacktraceKey:  "stacktrace",
		LineEnding:     zapcore.DefaultLineEnding,
		EncodeDuration: zapcore.StringDurationEncoder,
		EncodeCaller:   zapcore.ShortCallerEncoder,
	}
}

// encoder writes time and level as the first keys of every entry (zap's JSON
// encoder would put level first) and lets zap's JSON encoder write the rest.
type encoder struct {
	zapcore.Encoder
	pool buffer.Pool
}

// NewEncoder returns the JSON encoder of the service's log entries.
func NewEncoder() zapcore.Encoder {
	return &encoder{Encoder: zapcore.NewJSONEncoder(EncoderConfig()), pool: buffer.NewPool()}
}

func (e *encoder) Clone() zapcore.Encoder {
	return &encoder{Encoder: e.Encoder.Clone(), pool: e.pool}
}

func (e *encoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	rest, err := e.Encoder.EncodeEntry(ent, fields)
	if err != nil {
		return nil, err
	}
	defer rest.Free()
	out := e.pool.Get()
	out.AppendString(`{"time":"`)
	out.AppendTime(ent.Time.UTC(), TimeLayout)
	out.AppendString(`","level":"`)
	out.AppendString(ent.Level.CapitalString())
	out.AppendByte('"')
	body := rest.Bytes()[1:] // drop the inner object's opening brace
	if len(body) > 0 && body[0] != '}' {
		out.AppendByte(',')
	}
	_, _ = out.Write(body)
	return out, nil
}

// New returns a logger writing entries at level and above to standard output.
func New(level zapcore.Level) *zap.Logger {
	return NewTo(zapcore.Lock(os.Stdout), level)
}

// NewTo returns a logger writing entries at level and above to w.
func NewTo(w io.Writer, level zapcore.Level) *zap.Logger {
	core := zapcore.NewCore(NewEncoder(), zapcore.AddSync(w), level)
	return zap.New(core, zap.AddCaller(), zap.AddStacktrace(zapcore.ErrorLevel))
}

// FxLogger routes fx's own event log through log at DEBUG, errors included:
// start-up and shutdown failures are reported once, by the lifecycle, at ERROR.
func FxLogger(log *zap.Logger) fxevent.Logger {
	log = log.Named("fx").WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return fxCore{c} }))
	l := &fxevent.ZapLogger{Logger: log}
	l.UseLogLevel(zapcore.DebugLevel)
	l.UseErrorLevel(zapcore.DebugLevel)
	return l
}

// fxCore drops the "stacktrace" and "moduletrace" fields of fx's events:
// they list constructor source lines, and the stacktrace key belongs to
// ERROR and FATAL entries alone.
type fxCore struct{ zapcore.Core }

func (c fxCore) With(fields []zapcore.Field) zapcore.Core {
	return fxCore{c.Core.With(withoutTraces(fields))}
}

func (c fxCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c fxCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	return c.Core.Write(ent, withoutTraces(fields))
}

func withoutTraces(fields []zapcore.Field) []zapcore.Field {
	kept := fields[:0:0]
	for _, f := range fields {
		if f.Key != "stacktrace" && f.Key != "moduletrace" {
			kept = append(kept, f)
		}
	}
	return kept
}
