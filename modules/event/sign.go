package event

import (
	"crypto/ed25519"
	"encoding/hex"
)

// SignaturePrefix starts every signature.
const SignaturePrefix = "esdb:signature:v1:"

// Emitter writes records in their complete JSON form, with the signature
// computed for the key the service runs with (or null without one).
type Emitter struct {
	key ed25519.PrivateKey
}

// NewEmitter returns an Emitter signing with key; a nil key emits
// "signature":null.
func NewEmitter(key ed25519.PrivateKey) *Emitter {
	return &Emitter{key: key}
}

// Append appends the complete JSON object of r to dst.
func (e *Emitter) Append(dst []byte, r Record) []byte {
	dst = append(dst, r.JSON...)
	if e.key == nil {
		return append(dst, `,"signature":null}`...)
	}
	dst = append(dst, `,"signature":"`+SignaturePrefix...)
	sig := ed25519.Sign(e.key, r.HashBytes())
	dst = hex.AppendEncode(dst, sig)
	return append(dst, `"}`...)
}

// Verify reports whether signature is a valid signature of hash by public.
func Verify(public ed25519.PublicKey, hash, signature string) bool {
	if len(signature) != len(SignaturePrefix)+2*ed25519.SignatureSize || signature[:len(SignaturePrefix)] != SignaturePrefix {
		return false
	}
	sig, err := hex.DecodeString(signature[len(SignaturePrefix):])
	return err == nil && ed25519.Verify(public, []byte(hash), sig)
}
