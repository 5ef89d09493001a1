import { describe, expect, it } from 'vitest';
import { CitationBook, scanFileCitations } from '../../src/engine/citations.js';
import { memoryBytesOf } from '../../src/containers/service.js';
import { hostPath, isPlainName } from '../../src/containers/folder.js';

describe('container file citations', () => {
  const book = new CitationBook();
  book.registerFiles([
    { containerId: 'cntr_1', fileId: 'cfile_a', filename: 'a.csv', path: '/mnt/data/a.csv' },
    { containerId: 'cntr_1', fileId: 'cfile_b', filename: 'b.png', path: '/mnt/data/out/b.png' },
  ]);

  it('spans sandbox: links and bare paths, in text order', () => {
    const text = 'See [the table](sandbox:/mnt/data/a.csv) and /mnt/data/out/b.png. Also /mnt/data/a.csv.';
    const found = scanFileCitations(text, book.citedFiles);
    expect(found.map((a) => text.slice(a.start_index as number, a.end_index as number))).toEqual(['sandbox:/mnt/data/a.csv', '/mnt/data/out/b.png', '/mnt/data/a.csv']);
    expect(found[0]).toEqual({ type: 'container_file_citation', container_id: 'cntr_1', file_id: 'cfile_a', filename: 'a.csv', start_index: 16, end_index: 39 });
  });

  it('does not cite a longer name that merely starts with a registered path', () => {
    expect(scanFileCitations('/mnt/data/a.csv.bak and /mnt/data/a.csv2 and /mnt/data/a.csv_old', book.citedFiles)).toEqual([]);
  });
});

describe('container limits and paths', () => {
  it('maps memory_limit to the cap: at least 512 MiB, at most the operator maximum', () => {
    expect(memoryBytesOf('1g', 16 * 1024 ** 3)).toBe(1024 ** 3);
    expect(memoryBytesOf('256m', 16 * 1024 ** 3)).toBe(512 * 1024 ** 2);
    expect(memoryBytesOf('64g', 4 * 1024 ** 3)).toBe(4 * 1024 ** 3);
    expect(() => memoryBytesOf('lots', 1)).toThrow(/memory_limit/);
  });

  it('never maps a box path outside the working folder', () => {
    expect(hostPath('/w', '/mnt/data/a/b.csv')).toBe('/w/a/b.csv');
    for (const bad of ['/mnt/data/../x', '/mnt/data/a/../../x', '/etc/passwd', '/mnt/data/', '/mnt/data//x', '/mnt/datax/y']) expect(hostPath('/w', bad)).toBeUndefined();
    expect(isPlainName('report.csv')).toBe(true);
    for (const bad of ['', '.', '..', 'a/b', 'x\u0000y', 'a'.repeat(256)]) expect(isPlainName(bad)).toBe(false);
  });
});
