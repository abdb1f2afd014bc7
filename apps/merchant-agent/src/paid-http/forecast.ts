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

const SKIES = ['clear', 'clear', 'cloudy', 'rain', 'cloudy', 'clear'] as const;

/** One hour of a forecast: the unit the metered stream sells. */
export function forecastHour(location: string, hour: number) {
  return { location, in: hour, tempC: 19 - (hour % 7), sky: SKIES[hour % SKIES.length] };
}
