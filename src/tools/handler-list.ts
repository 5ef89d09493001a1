export { functionHandler } from './function/handler.js';
export { customHandler } from './custom/handler.js';
export { namespaceHandler } from './namespace/handler.js';
export { toolSearchHandler } from './tool-search/handler.js';
export { webSearchHandler } from './web-search/handler.js';
export { fileSearchHandler } from './file-search/handler.js';
export { codeInterpreterHandler } from './code-interpreter/handler.js';
export { mcpHandler } from './mcp/handler.js';
