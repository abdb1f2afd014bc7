import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsString, Matches } from 'class-validator';

const CHANNEL_ID = /^0x[0-9a-f]{64}$/;
const CHANNEL_ID_REASON = "must be the channel's id: 0x and 64 hex digits";

/** GET /channels/{channelId}: ids compare by their bytes, whatever the case they are written in. */
export class ChannelPath {
  @ApiProperty({ pattern: CHANNEL_ID.source, description: "the channel's id (bytes32)" })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))
  @Matches(CHANNEL_ID, { message: CHANNEL_ID_REASON })
  @IsString({ message: CHANNEL_ID_REASON })
  channelId!: string;
}
