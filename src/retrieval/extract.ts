import { extname } from 'node:path';
import { htmlToText } from '../search/html-to-text.js';

/** A file whose type cannot be read (OpenAI's `unsupported_file`). */
export class ExtractionError extends Error {
  constructor(readonly code: 'unsupported_file' | 'invalid_file', message: string) {
    super(message);
  }
}

/** Extensions read as plain text: prose, markup and source code (OpenAI's supported list, roughly). */
const TEXT_EXTENSIONS = new Set([
  '.txt', '.md', '.markdown', '.rst', '.tex', '.csv', '.tsv', '.json', '.jsonl', '.xml', '.yaml', '.yml', '.toml', '.ini', '.log',
  '.c', '.h', '.cc', '.cpp', '.hpp', '.cs', '.css', '.go', '.java', '.js', '.mjs', '.cjs', '.ts', '.tsx', '.jsx', '.php', '.py',
  '.rb', '.rs', '.sh', '.swift', '.kt', '.scala', '.sql', '.lua', '.pl', '.r', '.m', '.vue', '.svelte',
]);

/**
 * The text of an uploaded file: PDF (pdf.js via unpdf), DOCX (mammoth), HTML (the gateway's own
 * HTML-to-text), and text / Markdown / code as UTF-8. The type comes from the extension, checked
 * against the bytes (a `%PDF` header, a ZIP header), so a renamed binary is refused, not indexed.
 */
export async function extractText(bytes: Uint8Array, filename: string): Promise<string> {
  const ext = extname(filename).toLowerCase();
  const head = Buffer.from(bytes.subarray(0, 8)).toString('latin1');
  if (ext === '.pdf' || head.startsWith('%PDF-')) {
    if (!head.startsWith('%PDF-')) throw new ExtractionError('invalid_file', `${filename} is not a PDF document`);
    const { extractText: pdfText, getDocumentProxy } = await import('unpdf');
    try {
      // a copy: pdf.js takes ownership of (detaches) the buffer it is given
      const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
      const { text } = await pdfText(pdf, { mergePages: true });
      return text;
    } catch (err) {
      throw new ExtractionError('invalid_file', `${filename} could not be read as a PDF: ${(err as Error).message}`);
    }
  }
  if (ext === '.docx') {
    if (!head.startsWith('PK')) throw new ExtractionError('invalid_file', `${filename} is not a DOCX document`);
    const mammoth = (await import('mammoth')).default;
    try {
      return (await mammoth.extractRawText({ buffer: Buffer.from(bytes) })).value;
    } catch (err) {
      throw new ExtractionError('invalid_file', `${filename} could not be read as a DOCX document: ${(err as Error).message}`);
    }
  }
  const text = decodeUtf8(bytes);
  if (text === undefined) throw new ExtractionError('unsupported_file', `${filename}: this file type is not supported (not UTF-8 text, PDF, DOCX or HTML)`);
  if (ext === '.html' || ext === '.htm' || (ext === '' && /^\s*<(!doctype html|html)/i.test(text))) {
    const page = htmlToText(text);
    return page.title && !page.text.startsWith(page.title) ? `${page.title}\n\n${page.text}` : page.text;
  }
  if (TEXT_EXTENSIONS.has(ext) || ext === '') return text;
  // an unknown extension holding clean text is still text (a `.conf`, a `Makefile.am`)
  return text;
}

/** Strict UTF-8 without NUL bytes, or undefined (binary). */
function decodeUtf8(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '');
  } catch {
    return undefined;
  }
}
