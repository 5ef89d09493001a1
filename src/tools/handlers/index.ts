export { functionHandler } from './function.js';
export { customHandler } from './custom.js';
export { namespaceHandler } from './namespace.js';
export { toolSearchHandler } from './tool-search.js';
export { webSearchHandler } from './web-search.js';
export { fileSearchHandler } from './file-search.js';
export { codeInterpreterHandler } from './code-interpreter.js';
export { mcpHandler } from './mcp.js';
