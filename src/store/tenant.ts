/**
 * The tenant of everything stored while authentication is off, and of rows stored before tenants
 * existed (the migrations' column default). Keys name their own tenant.
 */
export const DEFAULT_TENANT = 'default';
