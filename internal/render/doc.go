// Package render owns how a consumed message becomes bytes on stdout (the text line, one
// JSON object a line, the raw payload bytes, or a user's Go template) and every lipgloss
// style of the product, which live in styles.go and nowhere else.
//
// Two rules shape everything here. Output meant for people (text, template, tables) never
// carries a control character from a message: a payload must not be able to move the
// cursor or recolour the terminal, so such characters are written as visible escapes.
// Output meant for machines (json, raw) is exact: `sub -o json | produce --json` and
// `sub -o raw` reproduce the produced bytes, so nothing there is re-encoded beyond what
// keeping one record a line requires.
//
// This package decodes payloads and keys itself (JSON string, base64) instead of relying on
// helpers of internal/client, so that the rules above are implemented, and tested, in one
// place.
package render
