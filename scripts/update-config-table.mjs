// Rewrites the configuration table in README.md from the schema (run after `npm run build`).
import { readFileSync, writeFileSync } from 'node:fs';
import { configTable } from '../dist/config/describe.js';

const file = new URL('../README.md', import.meta.url);
const readme = readFileSync(file, 'utf8');
const start = '<!-- config-table:start -->';
const end = '<!-- config-table:end -->';
const before = readme.slice(0, readme.indexOf(start) + start.length);
const after = readme.slice(readme.indexOf(end));
writeFileSync(file, `${before}\n${configTable()}\n${after}`);
console.log('README.md: configuration table updated');
