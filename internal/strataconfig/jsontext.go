package strataconfig

// The JSON text layer: a small parser that records where every value, key
// and member sits in the file, and edit primitives that splice new text into
// the original bytes. Nothing here re-encodes what it did not change, which
// is how unknown keys, key order, number spellings, escapes and the file's
// own indentation and line endings survive an edit.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds nesting so a hostile file cannot exhaust the stack.
const maxDepth = 512

var bom = []byte("\xef\xbb\xbf")

type kind byte

const (
	kObject kind = '{'
	kArray  kind = '['
	kString kind = '"'
	kNumber kind = '0'
	kTrue   kind = 't'
	kFalse  kind = 'f'
	kNull   kind = 'n'
)

func (k kind) String() string {
	switch k {
	case kObject:
		return "an object"
	case kArray:
		return "a list"
	case kString:
		return "a string"
	case kNumber:
		return "a number"
	case kTrue, kFalse:
		return "true/false"
	case kNull:
		return "null"
	}
	return "a value"
}

// node is one JSON value and its byte span [start, end) in the text.
type node struct {
	kind       kind
	start, end int
	members    []member // objects
	elems      []*node  // arrays
}

// member is one "key": value pair of an object.
type member struct {
	keyStart, keyEnd int
	key              string
	val              *node
}

// doc is a parsed JSON text.
type doc struct {
	src  []byte
	root *node
}

// syntaxError is what a file that is not JSON gets: with the line and column,
// so a person can find the problem.
type syntaxError struct {
	msg       string
	line, col int
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.line, e.col, e.msg)
}

func lineCol(src []byte, off int) (int, int) {
	if off > len(src) {
		off = len(src)
	}
	line := 1 + bytes.Count(src[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(src[:off], '\n')
	return line, col
}

// parse checks src with encoding/json (the strict judge of what is JSON) and
// then records the spans. A UTF-8 byte-order mark is tolerated and kept.
func parse(src []byte) (*doc, error) {
	body := src
	off := 0
	if bytes.HasPrefix(src, bom) {
		off = len(bom)
		body = src[off:]
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("the file is empty")
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			l, c := lineCol(src, off+int(se.Offset))
			msg := se.Error()
			if strings.Contains(msg, "unexpected end of JSON input") {
				msg = "the file ends too early (is it cut short?)"
			}
			return nil, &syntaxError{msg: msg, line: l, col: c}
		}
		if err != nil {
			return nil, err
		}
		return nil, errors.New("not valid JSON")
	}
	p := &parser{src: src, pos: off}
	p.ws()
	root, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.pos != len(src) {
		l, c := lineCol(src, p.pos)
		return nil, &syntaxError{msg: "text after the end of the JSON value", line: l, col: c}
	}
	return &doc{src: src, root: root}, nil
}

type parser struct {
	src []byte
	pos int
}

func (p *parser) ws() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

// next reads what follows an object's member or an array's element: a
// comma (more is true) or the closing bracket (n ends there); anything else
// is an error.
func (p *parser) next(n *node, closing byte) (more bool, err error) {
	p.ws()
	if p.pos >= len(p.src) {
		return false, p.fail("unexpected end")
	}
	switch p.src[p.pos] {
	case ',':
		p.pos++
		return true, nil
	case closing:
		p.pos++
		n.end = p.pos
		return false, nil
	}
	return false, p.fail("expected ',' or '" + string(closing) + "'")
}

func (p *parser) fail(msg string) error {
	l, c := lineCol(p.src, p.pos)
	return &syntaxError{msg: msg, line: l, col: c}
}

func (p *parser) value(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, p.fail("nested too deeply")
	}
	if p.pos >= len(p.src) {
		return nil, p.fail("unexpected end")
	}
	start := p.pos
	switch c := p.src[p.pos]; {
	case c == '{':
		n := &node{kind: kObject, start: start}
		p.pos++
		p.ws()
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		for {
			p.ws()
			ks := p.pos
			if err := p.str(); err != nil {
				return nil, err
			}
			ke := p.pos
			var key string
			if err := json.Unmarshal(p.src[ks:ke], &key); err != nil {
				return nil, p.fail("bad key")
			}
			p.ws()
			if p.pos >= len(p.src) || p.src[p.pos] != ':' {
				return nil, p.fail("expected ':'")
			}
			p.pos++
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, member{keyStart: ks, keyEnd: ke, key: key, val: v})
			if more, err := p.next(n, '}'); err != nil {
				return nil, err
			} else if !more {
				return n, nil
			}
		}
	case c == '[':
		n := &node{kind: kArray, start: start}
		p.pos++
		p.ws()
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		for {
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, v)
			if more, err := p.next(n, ']'); err != nil {
				return nil, err
			} else if !more {
				return n, nil
			}
		}
	case c == '"':
		if err := p.str(); err != nil {
			return nil, err
		}
		return &node{kind: kString, start: start, end: p.pos}, nil
	case c == 't' || c == 'f' || c == 'n':
		word := map[byte]string{'t': "true", 'f': "false", 'n': "null"}[c]
		if !bytes.HasPrefix(p.src[p.pos:], []byte(word)) {
			return nil, p.fail("bad literal")
		}
		p.pos += len(word)
		return &node{kind: kind(c), start: start, end: p.pos}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		for p.pos < len(p.src) && strings.IndexByte("+-0123456789.eE", p.src[p.pos]) >= 0 {
			p.pos++
		}
		return &node{kind: kNumber, start: start, end: p.pos}, nil
	}
	return nil, p.fail("unexpected character")
}

func (p *parser) str() error {
	if p.pos >= len(p.src) || p.src[p.pos] != '"' {
		return p.fail("expected a string")
	}
	p.pos++
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '\\':
			p.pos += 2
		case '"':
			p.pos++
			return nil
		default:
			p.pos++
		}
	}
	return p.fail("unterminated string")
}

// --- reading values ---

func (d *doc) text(n *node) []byte { return d.src[n.start:n.end] }

// get returns the member named key of object n (the last one if the key is
// repeated, as Python's json module does), and its index.
func (n *node) get(key string) (*member, int) {
	if n == nil || n.kind != kObject {
		return nil, -1
	}
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return &n.members[i], i
		}
	}
	return nil, -1
}

func (n *node) count(key string) int {
	c := 0
	if n != nil {
		for _, m := range n.members {
			if m.key == key {
				c++
			}
		}
	}
	return c
}

func (d *doc) str(n *node) (string, bool) {
	if n == nil || n.kind != kString {
		return "", false
	}
	var s string
	if json.Unmarshal(d.text(n), &s) != nil {
		return "", false
	}
	return s, true
}

// lookup follows a path of object keys from the root.
func (d *doc) lookup(path ...string) *node {
	n := d.root
	for _, k := range path {
		m, _ := n.get(k)
		if m == nil {
			return nil
		}
		n = m.val
	}
	return n
}

// --- the file's style ---

// style is what an insertion copies from the file: its line ending, its
// indent step, and whether non-ASCII is written escaped (Python's default).
type style struct {
	nl         string
	unit       string
	asciiOnly  bool
	colonSpace string
}

func (d *doc) style() style {
	st := style{nl: "\n", unit: "  ", colonSpace: " "}
	if bytes.Contains(d.src, []byte("\r\n")) {
		st.nl = "\r\n"
	}
	st.asciiOnly = true
	for _, b := range d.src[bodyStart(d.src):] {
		if b >= utf8.RuneSelf {
			st.asciiOnly = false
			break
		}
	}
	if r := d.root; r.kind == kObject && len(r.members) > 0 {
		m := r.members[0]
		if ind, ok := indentBefore(d.src, m.keyStart); ok && ind != "" {
			st.unit = ind
		}
		st.colonSpace = strings.TrimPrefix(string(d.src[m.keyEnd:m.val.start]), ":")
		if strings.ContainsAny(st.colonSpace, "\r\n:") {
			st.colonSpace = " "
		}
	}
	return st
}

func bodyStart(src []byte) int {
	if bytes.HasPrefix(src, bom) {
		return len(bom)
	}
	return 0
}

// indentBefore returns the whitespace between the last line break before off
// and off, and whether off starts its line.
func indentBefore(src []byte, off int) (string, bool) {
	i := off
	for i > 0 && (src[i-1] == ' ' || src[i-1] == '\t') {
		i--
	}
	if i > 0 && src[i-1] == '\n' {
		return string(src[i:off]), true
	}
	return "", false
}

// lineIndent is the indentation of the line that holds off.
func lineIndent(src []byte, off int) string {
	ls := bytes.LastIndexByte(src[:off], '\n') + 1
	e := ls
	for e < len(src) && (src[e] == ' ' || src[e] == '\t') {
		e++
	}
	return string(src[ls:e])
}

// --- rendering new values in the file's style ---

// jsonString encodes s as the file would: no HTML escaping, and non-ASCII
// escaped when the file has none (Python's ensure_ascii).
func (st style) jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out := strings.TrimSuffix(buf.String(), "\n")
	if !st.asciiOnly {
		return out
	}
	var b strings.Builder
	for _, r := range out {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

// field is one member of an object the companion writes.
type field struct {
	key string
	val string // JSON text, already in the file's style
}

// renderObject writes members as an object whose opening brace sits on a line
// indented by indent; multi-line unless oneLine.
func (st style) renderObject(fields []field, indent string, oneLine bool) string {
	if len(fields) == 0 {
		return "{}"
	}
	var b strings.Builder
	b.WriteString("{")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(",")
			if oneLine {
				b.WriteString(st.itemSpace())
			}
		}
		if !oneLine {
			b.WriteString(st.nl + indent + st.unit)
		}
		b.WriteString(st.jsonString(f.key) + ":" + st.colonSpace + f.val)
	}
	if !oneLine {
		b.WriteString(st.nl + indent)
	}
	b.WriteString("}")
	return b.String()
}

// --- edits: each returns new bytes; the caller re-parses ---

func splice(src []byte, start, end int, text string) []byte {
	out := make([]byte, 0, len(src)-(end-start)+len(text))
	out = append(out, src[:start]...)
	out = append(out, text...)
	return append(out, src[end:]...)
}

// afterComma returns the whitespace between the comma that follows a value
// ending at valEnd and the next token.
func afterComma(src []byte, valEnd int) (commaEnd, next int) {
	i := valEnd
	for i < len(src) && src[i] != ',' {
		i++
	}
	i++
	j := i
	for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\r' || src[j] == '\n') {
		j++
	}
	return i, j
}

// gapBefore is the whitespace to put between a comma and a new item inserted
// at index i of a container whose items span [starts[k], ends[k]).
func gapBefore(src []byte, open int, starts, ends []int, i int, st style) string {
	if len(starts) >= 2 {
		// The gap in front of an existing neighbour is the best model.
		k := i
		if k < 1 {
			k = 1
		}
		if k > len(starts)-1 {
			k = len(starts) - 1
		}
		ce, _ := afterComma(src, ends[k-1])
		return string(src[ce:starts[k]])
	}
	// One item: the text between the opening bracket and it says whether
	// items stand on their own lines.
	if bytes.Contains(src[open+1:starts[0]], []byte("\n")) {
		ind, _ := indentBefore(src, starts[0])
		return st.nl + ind
	}
	return st.itemSpace()
}

// itemSpace is what follows a comma in a one-line container: nothing in a
// compact file (one written with separators (",", ":")), else a space.
func (st style) itemSpace() string {
	if st.colonSpace == "" {
		return ""
	}
	return " "
}

// renderList writes a list of JSON texts: one per line when multi-line.
func (st style) renderList(items []string, indent string, multi bool) string {
	if len(items) == 0 {
		return "[]"
	}
	if !multi {
		return "[" + strings.Join(items, ","+st.itemSpace()) + "]"
	}
	var b strings.Builder
	b.WriteString("[")
	for i, it := range items {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(st.nl + indent + st.unit + it)
	}
	b.WriteString(st.nl + indent + "]")
	return b.String()
}

func (n *node) memberSpans() (starts, ends []int) {
	for _, m := range n.members {
		starts = append(starts, m.keyStart)
		ends = append(ends, m.val.end)
	}
	return
}

func (n *node) elemSpans() (starts, ends []int) {
	for _, e := range n.elems {
		starts = append(starts, e.start)
		ends = append(ends, e.end)
	}
	return
}

// insertItem puts item (the text of a member or an element) at index i of
// container n (0 <= i <= len). item gets the indentation of the line it will
// start on and whether the container's items stand on their own lines.
func (d *doc) insertItem(n *node, i int, item func(indent string, multiline bool) string) []byte {
	st := d.style()
	var starts, ends []int
	if n.kind == kObject {
		starts, ends = n.memberSpans()
	} else {
		starts, ends = n.elemSpans()
	}
	if len(starts) == 0 {
		// An empty container: multi-line when its parent's items are on
		// their own lines (the file's pretty-printed shape).
		base := lineIndent(d.src, n.start)
		if n == d.root || d.parentMultiline(n) {
			ind := base + st.unit
			return splice(d.src, n.start+1, n.end-1, st.nl+ind+item(ind, true)+st.nl+base)
		}
		return splice(d.src, n.start+1, n.end-1, item(base, false))
	}
	gap := gapBefore(d.src, n.start, starts, ends, i, st)
	multi := strings.Contains(gap, "\n")
	indent := lineIndent(d.src, starts[min(i, len(starts)-1)])
	if i >= len(starts) {
		return splice(d.src, ends[len(ends)-1], ends[len(ends)-1], ","+gap+item(indent, multi))
	}
	return splice(d.src, starts[i], starts[i], item(indent, multi)+","+gap)
}

// parentMultiline reports whether the container that holds target puts
// its items on their own lines.
func (d *doc) parentMultiline(target *node) bool {
	var walk func(n *node) (bool, bool)
	walk = func(n *node) (found, ml bool) {
		for _, m := range n.members {
			if m.val == target {
				return true, bytes.Contains(d.src[n.start:m.keyStart], []byte("\n"))
			}
			if f, ml := walk(m.val); f {
				return f, ml
			}
		}
		for _, e := range n.elems {
			if e == target {
				return true, bytes.Contains(d.src[n.start:e.start], []byte("\n"))
			}
			if f, ml := walk(e); f {
				return f, ml
			}
		}
		return false, false
	}
	_, ml := walk(d.root)
	return ml
}

// removeItem deletes item i of container n with the comma and whitespace that
// belong to it, so the rest of the text is untouched.
func (d *doc) removeItem(n *node, i int) []byte {
	var starts, ends []int
	if n.kind == kObject {
		starts, ends = n.memberSpans()
	} else {
		starts, ends = n.elemSpans()
	}
	switch {
	case len(starts) == 1:
		return splice(d.src, n.start+1, n.end-1, "")
	case i > 0:
		return splice(d.src, ends[i-1], ends[i], "")
	default:
		return splice(d.src, starts[0], starts[1], "")
	}
}

// setMember replaces the value of key in object n, or inserts the member at
// index at (-1: at the end). val renders the value for the indentation of the
// member's line and whether the object is multi-line.
func (d *doc) setMember(n *node, key string, at int, val func(indent string, multiline bool) string) []byte {
	if m, _ := n.get(key); m != nil {
		return splice(d.src, m.val.start, m.val.end, val(lineIndent(d.src, m.keyStart), bytes.Contains(d.src[n.start:m.keyStart], []byte("\n"))))
	}
	st := d.style()
	if at < 0 || at > len(n.members) {
		at = len(n.members)
	}
	return d.insertItem(n, at, func(indent string, multi bool) string {
		return st.jsonString(key) + ":" + st.colonSpace + val(indent, multi)
	})
}

// deleteMember removes every member named key from object n.
func deleteMember(src []byte, path []string, key string) ([]byte, error) {
	for {
		d, err := parse(src)
		if err != nil {
			return nil, err
		}
		n := d.lookup(path...)
		if n == nil || n.kind != kObject {
			return src, nil
		}
		_, i := n.get(key)
		if i < 0 {
			return src, nil
		}
		src = d.removeItem(n, i)
	}
}

// setValue sets key in the object at path to the JSON text val (the same
// text for every indentation), inserting it at the end when absent.
func setValue(src []byte, path []string, key, val string) ([]byte, error) {
	d, err := parse(src)
	if err != nil {
		return nil, err
	}
	n := d.lookup(path...)
	if n == nil || n.kind != kObject {
		return nil, fmt.Errorf("%s is not an object", strings.Join(path, "."))
	}
	if m, _ := n.get(key); m != nil && string(d.text(m.val)) == val {
		return src, nil
	}
	return d.setMember(n, key, -1, func(string, bool) string { return val }), nil
}
