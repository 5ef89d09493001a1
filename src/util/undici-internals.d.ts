// undici's internal symbols (no types shipped for them): used by undici-clients.ts only.
declare module 'undici/lib/core/symbols.js' {
  const symbols: Record<string, symbol>;
  export default symbols;
}
