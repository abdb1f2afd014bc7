/** What every paid route sells: a small machine-readable forecast. */
export function forecastFor(location: string) {
  return {
    location,
    issuedAt: new Date().toISOString(),
    hours: [
      { in: 1, tempC: 19, sky: 'clear' },
      { in: 2, tempC: 18, sky: 'clear' },
      { in: 3, tempC: 17, sky: 'cloudy' },
    ],
  };
}
