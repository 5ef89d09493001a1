/**
 * The terminals of Lark's `common.lark` that `%import common.X` provides, written in the dialect
 * this package parses. Where Lark's originals rely on lazy quantifiers or lookbehind (matched
 * by backtracking), equivalent linear-time forms are used: ESCAPED_STRING is a quoted string
 * whose escapes are a backslash and any character; C_COMMENT ends at the first `*​/`.
 */
export const COMMON_LARK = String.raw`
DIGIT: "0".."9"
HEXDIGIT: "a".."f" | "A".."F" | DIGIT
INT: DIGIT+
SIGNED_INT: ["+"|"-"] INT
DECIMAL: INT "." INT? | "." INT
_EXP: ("e"|"E") SIGNED_INT
FLOAT: INT _EXP | DECIMAL _EXP?
SIGNED_FLOAT: ["+"|"-"] FLOAT
NUMBER: FLOAT | INT
SIGNED_NUMBER: ["+"|"-"] NUMBER
_STRING_ESC_INNER: /([^"\\\n]|\\.)*/
ESCAPED_STRING: "\"" _STRING_ESC_INNER "\""
LCASE_LETTER: "a".."z"
UCASE_LETTER: "A".."Z"
LETTER: UCASE_LETTER | LCASE_LETTER
WORD: LETTER+
CNAME: ("_"|LETTER) ("_"|LETTER|DIGIT)*
WS_INLINE: (" "|/\t/)+
WS: /[ \t\f\r\n]/+
CR: /\r/
LF: /\n/
NEWLINE: (CR? LF)+
C_COMMENT: /\/\*([^*]|\*+[^*\/])*\*+\//
CPP_COMMENT: /\/\/[^\n]*/
SH_COMMENT: /#[^\n]*/
SQL_COMMENT: /--[^\n]*/
`;
