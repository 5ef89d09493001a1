import {
  clampCount,
  cleanDomains,
  finishResults,
  httpError,
  malformed,
  providerRequest,
  str,
  type SearchProvider,
  type SearchRequest,
  type SearchResult,
} from './provider.js';

/**
 * Tavily Search (`POST https://api.tavily.com/search`, `Authorization: Bearer tvly-…`;
 * https://docs.tavily.com/documentation/api-reference/endpoint/search).
 *
 * Request mapping (JSON body):
 * - `query`, `max_results` (the count clamped to Tavily's 1–20), `search_depth: "basic"`
 *   (1 credit), `topic: "general"`.
 * - `include_domains`: the allowed domains (native filtering), `exclude_domains: []`.
 * - `country`: userLocation.country (ISO 3166-1 alpha-2) mapped to the lowercase English
 *   country name Tavily's enum expects (`US` → `united states`); omitted for countries
 *   outside that enum. Only valid with topic general, which is what is sent.
 *
 * Response: `results[].{title, url, content, score, published_date}` — `content` is the
 * snippet, `published_date` (present for news-like results) is `publishedAt`.
 * Errors: 429 (rate limit, `Retry-After` honoured), 432 (plan usage limit) and 433
 * (pay-as-you-go limit) are all reported as rate limited; bodies are `{"detail":{"error":…}}`.
 */

export interface TavilyOptions {
  apiKey: string;
  timeoutMs: number;
  /** Base URL override (default https://api.tavily.com); `/search` is appended unless already there. */
  baseUrl?: string;
}

export const TAVILY_DEFAULT_BASE_URL = 'https://api.tavily.com';
const LABEL = 'Tavily API';

/** ISO 3166-1 alpha-2 → the country names in Tavily's `country` enum. */
export const TAVILY_COUNTRIES: Readonly<Record<string, string>> = {
  AD: 'andorra', AE: 'united arab emirates', AF: 'afghanistan', AL: 'albania', AM: 'armenia', AO: 'angola',
  AR: 'argentina', AT: 'austria', AU: 'australia', AZ: 'azerbaijan', BA: 'bosnia and herzegovina',
  BB: 'barbados', BD: 'bangladesh', BE: 'belgium', BF: 'burkina faso', BG: 'bulgaria', BH: 'bahrain',
  BI: 'burundi', BJ: 'benin', BN: 'brunei', BO: 'bolivia', BR: 'brazil', BS: 'bahamas', BT: 'bhutan',
  BW: 'botswana', BY: 'belarus', BZ: 'belize', CA: 'canada', CF: 'central african republic', CG: 'congo',
  CH: 'switzerland', CL: 'chile', CM: 'cameroon', CN: 'china', CO: 'colombia', CR: 'costa rica', CU: 'cuba',
  CV: 'cape verde', CY: 'cyprus', CZ: 'czech republic', DE: 'germany', DJ: 'djibouti', DK: 'denmark',
  DO: 'dominican republic', DZ: 'algeria', EC: 'ecuador', EE: 'estonia', EG: 'egypt', ER: 'eritrea',
  ES: 'spain', ET: 'ethiopia', FI: 'finland', FJ: 'fiji', FR: 'france', GA: 'gabon', GB: 'united kingdom',
  GE: 'georgia', GH: 'ghana', GM: 'gambia', GN: 'guinea', GQ: 'equatorial guinea', GR: 'greece',
  GT: 'guatemala', HN: 'honduras', HR: 'croatia', HT: 'haiti', HU: 'hungary', ID: 'indonesia', IE: 'ireland',
  IL: 'israel', IN: 'india', IQ: 'iraq', IR: 'iran', IS: 'iceland', IT: 'italy', JM: 'jamaica', JO: 'jordan',
  JP: 'japan', KE: 'kenya', KG: 'kyrgyzstan', KH: 'cambodia', KM: 'comoros', KP: 'north korea',
  KR: 'south korea', KW: 'kuwait', KZ: 'kazakhstan', LB: 'lebanon', LI: 'liechtenstein', LK: 'sri lanka',
  LR: 'liberia', LS: 'lesotho', LT: 'lithuania', LU: 'luxembourg', LV: 'latvia', LY: 'libya', MA: 'morocco',
  MC: 'monaco', MD: 'moldova', ME: 'montenegro', MG: 'madagascar', MK: 'north macedonia', ML: 'mali',
  MM: 'myanmar', MN: 'mongolia', MR: 'mauritania', MT: 'malta', MU: 'mauritius', MV: 'maldives', MW: 'malawi',
  MX: 'mexico', MY: 'malaysia', MZ: 'mozambique', NA: 'namibia', NE: 'niger', NG: 'nigeria', NI: 'nicaragua',
  NL: 'netherlands', NO: 'norway', NP: 'nepal', NZ: 'new zealand', OM: 'oman', PA: 'panama', PE: 'peru',
  PG: 'papua new guinea', PH: 'philippines', PK: 'pakistan', PL: 'poland', PT: 'portugal', PY: 'paraguay',
  QA: 'qatar', RO: 'romania', RS: 'serbia', RU: 'russia', RW: 'rwanda', SA: 'saudi arabia', SD: 'sudan',
  SE: 'sweden', SG: 'singapore', SI: 'slovenia', SK: 'slovakia', SN: 'senegal', SO: 'somalia',
  SS: 'south sudan', SV: 'el salvador', SY: 'syria', TD: 'chad', TG: 'togo', TH: 'thailand', TJ: 'tajikistan',
  TM: 'turkmenistan', TN: 'tunisia', TR: 'turkey', TT: 'trinidad and tobago', TW: 'taiwan', TZ: 'tanzania',
  UA: 'ukraine', UG: 'uganda', US: 'united states', UY: 'uruguay', UZ: 'uzbekistan', VE: 'venezuela',
  VN: 'vietnam', YE: 'yemen', ZA: 'south africa', ZM: 'zambia', ZW: 'zimbabwe',
};

const TAVILY_COUNTRY_NAMES = new Set(Object.values(TAVILY_COUNTRIES));

/** The Tavily country name for an ISO code (or an already-spelled-out name), undefined when Tavily has none. */
export function tavilyCountry(country: string | undefined): string | undefined {
  const value = str(country);
  if (!value) return undefined;
  const byCode = TAVILY_COUNTRIES[value.toUpperCase()];
  if (byCode) return byCode;
  const name = value.toLowerCase();
  return TAVILY_COUNTRY_NAMES.has(name) ? name : undefined;
}

export class TavilyProvider implements SearchProvider {
  readonly name = 'tavily';
  private readonly endpoint: string;

  constructor(private readonly options: TavilyOptions) {
    const base = (options.baseUrl ?? TAVILY_DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.endpoint = base.endsWith('/search') ? base : `${base}/search`;
  }

  async search(request: SearchRequest): Promise<SearchResult[]> {
    const maxResults = clampCount(request.count, 1, 20);
    const body: Record<string, unknown> = {
      query: request.query,
      max_results: maxResults,
      search_depth: 'basic',
      topic: 'general',
      include_domains: cleanDomains(request.allowedDomains),
      exclude_domains: [],
    };
    const country = tavilyCountry(request.userLocation?.country);
    if (country) body.country = country;
    const secrets = [this.options.apiKey];
    const response = await providerRequest({
      label: LABEL,
      url: this.endpoint,
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json', authorization: `Bearer ${this.options.apiKey}` },
      body: JSON.stringify(body),
      timeoutMs: this.options.timeoutMs,
      signal: request.signal,
      secrets,
    });
    if (response.status < 200 || response.status >= 300) {
      throw httpError(LABEL, response, {
        secrets,
        rateLimitStatuses: [432, 433],
        hint: response.status === 432 ? 'plan usage limit exceeded' : response.status === 433 ? 'pay-as-you-go limit exceeded' : undefined,
      });
    }
    const json = response.json as { results?: unknown } | undefined;
    if (!json || typeof json !== 'object' || !Array.isArray(json.results)) throw malformed(LABEL, 'no results array');
    return finishResults(json.results.map(toResult), clampCount(request.count, 0, 20));
  }
}

function toResult(raw: unknown): SearchResult {
  const r = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const url = str(r.url) ?? '';
  const result: SearchResult = { title: str(r.title) ?? url, url, snippet: str(r.content) ?? '' };
  const published = str(r.published_date);
  if (published) result.publishedAt = published;
  return result;
}
