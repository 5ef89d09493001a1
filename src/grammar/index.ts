export { FormatCache } from './cache.js';
export type { Mismatch } from './earley.js';
export { GrammarDefinitionError, WorkLimitError } from './errors.js';
export { FormatChecker, type CheckResult, type GrammarSyntax } from './format-checker.js';
export { compileLark } from './grammar-compiler.js';
export { parseRegex } from './regex-parser.js';
export { CompiledRegex, codePoints } from './regex-vm.js';
