package jsonscan

import "testing"

func TestCanonicalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{}`, `{}`},
		{` { "b" : 1 , "a" : [ 1 , 2 , { "d" : null , "c" : true } ] } `, `{"a":[1,2,{"c":true,"d":null}],"b":1}`},
		{`{"n":1.50}`, `{"n":1.5}`},
		{`{"n":1.0}`, `{"n":1}`},
		{`{"n":1e3}`, `{"n":1000}`},
		{`{"n":1E3}`, `{"n":1000}`},
		{`{"n":1e21}`, `{"n":1e+21}`},
		{`{"n":1e-7}`, `{"n":1e-7}`},
		{`{"n":0.000001}`, `{"n":0.000001}`},
		{`{"n":-0}`, `{"n":-0}`},
		{`{"n":-0.0}`, `{"n":-0}`},
		{`{"n":12345678901234567890123456789}`, `{"n":12345678901234567890123456789}`},
		{`{"s":"<&>"}`, `{"s":"\u003c\u0026\u003e"}`},
		{`{"s":"\u003c"}`, `{"s":"\u003c"}`},
		{`{"s":"line\u2028sep\u2029"}`, `{"s":"line\u2028sep\u2029"}`},
		{`{"s":"\/\b\f\n\r\t\"\\\u0001"}`, `{"s":"/\b\f\n\r\t\"\\\u0001"}`},
		{`{"s":"grüße 日本 😀"}`, `{"s":"grüße 日本 😀"}`},
		{`{"s":"\ud83d\ude00"}`, `{"s":"😀"}`},
		{`{"s":"\ud83d"}`, `{"s":"` + "\ufffd" + `"}`},
		{"{\"s\":\"bad\xff\"}", `{"s":"bad` + "\ufffd" + `"}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"b":{"z":1,"y":2},"a":0}`, `{"a":0,"b":{"y":2,"z":1}}`},
		{`{"é":1,"e":2,"Z":3}`, `{"Z":3,"e":2,"é":1}`},
	}
	for _, tc := range cases {
		got, err := Canonicalize([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonicalize(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
		ref, err := reference([]byte(tc.in))
		if err != nil || string(ref) != tc.want {
			t.Errorf("reference(%s) = %s, %v; the table disagrees with encoding/json", tc.in, ref, err)
		}
	}
	for _, bad := range []string{``, `[]`, `"x"`, `42`, `null`, `{"n":1e400}`, `{"a":1}x`, `{"a":}`, `{"a":01}`, `{"a":"` + "\x01" + `"}`} {
		if got, err := Canonicalize([]byte(bad)); err == nil {
			t.Errorf("Canonicalize(%q) accepted: %s", bad, got)
		}
	}
	if _, err := Canonicalize([]byte(`[1]`)); err != ErrNotObject {
		t.Errorf("array: %v, want ErrNotObject", err)
	}
}
