package schema

import (
	"bytes"
	"encoding/json"
)

// Open returns raw with every "additionalProperties": false member dropped,
// so each object of the schema accepts fields beyond those it names: a
// capability's result may carry more than its schema says, and an API input
// record ignores unknown fields. Every other member keeps its place and its
// exact text (numbers are not rounded); the output is compact. Raw that is
// not valid JSON is returned as it is.
func Open(raw json.RawMessage) json.RawMessage {
	var out bytes.Buffer
	if err := copyOpen(numberDecoder(raw), &out); err != nil {
		return raw
	}
	return out.Bytes()
}

// numberDecoder decodes raw keeping numbers as their text.
func numberDecoder(raw []byte) *json.Decoder {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec
}

// copyOpen copies one JSON value from dec to out, leaving out
// "additionalProperties": false members.
func copyOpen(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			first := true
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				var val json.RawMessage
				if err := dec.Decode(&val); err != nil {
					return err
				}
				if key == "additionalProperties" && string(bytes.TrimSpace(val)) == "false" {
					continue
				}
				if !first {
					out.WriteByte(',')
				}
				first = false
				kb, _ := json.Marshal(key)
				out.Write(kb)
				out.WriteByte(':')
				if err := copyOpen(numberDecoder(val), out); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // '}'
				return err
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			first := true
			for dec.More() {
				var val json.RawMessage
				if err := dec.Decode(&val); err != nil {
					return err
				}
				if !first {
					out.WriteByte(',')
				}
				first = false
				if err := copyOpen(numberDecoder(val), out); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ']'
				return err
			}
			out.WriteByte(']')
		}
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		out.Write(b)
	}
	return nil
}
